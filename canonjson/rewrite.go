package canonjson

import (
	"bytes"
	"slices"
	"unicode/utf8"

	"github.com/beam-agents/toolreg/internal/jsonscan"
)

// rewrite is Canonicalize's fast path: one pass over the text, writing each
// value in canonical form as it reads it, and moving an object's members into
// key order when they were not (a struct's fields come in declaration order).
// It reports !ok, having decided nothing, on anything it does not handle
// itself (a duplicate key, a surrogate escape, invalid UTF-8, nesting past
// maxTextDepth) and on anything that is not JSON: the reference path then writes
// the value or says what is wrong. FuzzCanonicalize holds the two to the same
// bytes.
func rewrite(raw []byte) ([]byte, bool) {
	r := rewriter{in: raw}
	out, ok := r.value(make([]byte, 0, len(raw)), 0)
	if !ok || r.skipSpace() != len(raw) {
		return nil, false
	}
	return out, true
}

// maxTextDepth bounds the nesting rewrite follows; deeper text goes to the
// reference path, whose decoder has its own limit.
const maxTextDepth = 1000

type rewriter struct {
	in      []byte
	i       int
	scratch []byte // where object reorders its members
}

type member struct {
	key        []byte // decoded
	start, end int    // the member's canonical text in the output
}

func (r *rewriter) skipSpace() int {
	for r.i < len(r.in) {
		switch r.in[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return r.i
		}
	}
	return r.i
}

func (r *rewriter) value(out []byte, depth int) ([]byte, bool) {
	if r.skipSpace() >= len(r.in) || depth > maxTextDepth {
		return nil, false
	}
	switch c := r.in[r.i]; {
	case c == '{':
		return r.object(out, depth+1)
	case c == '[':
		return r.array(out, depth+1)
	case c == '"':
		start := r.i
		s, verbatim, ok := r.str()
		switch {
		case !ok:
			return nil, false
		case verbatim:
			return append(out, r.in[start:r.i]...), true
		}
		return AppendString(out, unsafeString(s)), true
	case c == 't':
		return r.literal(out, "true")
	case c == 'f':
		return r.literal(out, "false")
	case c == 'n':
		return r.literal(out, "null")
	case c == '-' || c >= '0' && c <= '9':
		return r.number(out)
	}
	return nil, false
}

func (r *rewriter) literal(out []byte, lit string) ([]byte, bool) {
	if !bytes.HasPrefix(r.in[r.i:], []byte(lit)) {
		return nil, false
	}
	r.i += len(lit)
	return append(out, lit...), true
}

// number reads a number by JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *rewriter) number(out []byte) ([]byte, bool) {
	start := r.i
	if r.in[r.i] == '-' {
		r.i++
	}
	switch {
	case r.i < len(r.in) && r.in[r.i] == '0':
		r.i++
	case r.digits() == 0:
		return nil, false
	}
	if r.i < len(r.in) && r.in[r.i] == '.' {
		r.i++
		if r.digits() == 0 {
			return nil, false
		}
	}
	if r.i < len(r.in) && (r.in[r.i] == 'e' || r.in[r.i] == 'E') {
		r.i++
		if r.i < len(r.in) && (r.in[r.i] == '+' || r.in[r.i] == '-') {
			r.i++
		}
		if r.digits() == 0 {
			return nil, false
		}
	}
	return AppendNumber(out, unsafeString(r.in[start:r.i]))
}

func (r *rewriter) digits() int {
	start := r.i
	for r.i < len(r.in) && r.in[r.i] >= '0' && r.in[r.i] <= '9' {
		r.i++
	}
	return r.i - start
}

func (r *rewriter) array(out []byte, depth int) ([]byte, bool) {
	r.i++ // [
	out = append(out, '[')
	if r.skipSpace() < len(r.in) && r.in[r.i] == ']' {
		r.i++
		return append(out, ']'), true
	}
	for {
		var ok bool
		if out, ok = r.value(out, depth); !ok {
			return nil, false
		}
		if r.skipSpace() >= len(r.in) {
			return nil, false
		}
		switch r.in[r.i] {
		case ',':
			r.i++
			out = append(out, ',')
		case ']':
			r.i++
			return append(out, ']'), true
		default:
			return nil, false
		}
	}
}

// object writes each member as it reads it, `"key":value`, and then, if the
// keys were not in order already, moves the members into order.
func (r *rewriter) object(out []byte, depth int) ([]byte, bool) {
	r.i++ // {
	out = append(out, '{')
	if r.skipSpace() < len(r.in) && r.in[r.i] == '}' {
		r.i++
		return append(out, '}'), true
	}
	var stack [8]member
	ms := stack[:0]
	body := len(out)
	sorted := true
	for {
		if r.skipSpace() >= len(r.in) || r.in[r.i] != '"' {
			return nil, false
		}
		keyStart := r.i
		key, verbatim, ok := r.str()
		keyEnd := r.i
		if !ok || r.skipSpace() >= len(r.in) || r.in[r.i] != ':' {
			return nil, false
		}
		r.i++
		if n := len(ms); n > 0 {
			switch c := bytes.Compare(ms[n-1].key, key); {
			case c == 0:
				return nil, false // the reference keeps the last; rare enough to leave to it
			case c > 0:
				sorted = false
			}
			out = append(out, ',')
		}
		start := len(out)
		if verbatim {
			out = append(out, r.in[keyStart:keyEnd]...)
		} else {
			out = AppendString(out, unsafeString(key))
		}
		out = append(out, ':')
		if out, ok = r.value(out, depth); !ok {
			return nil, false
		}
		ms = append(ms, member{key: key, start: start, end: len(out)})
		if r.skipSpace() >= len(r.in) {
			return nil, false
		}
		if r.in[r.i] == '}' {
			r.i++
			break
		}
		if r.in[r.i] != ',' {
			return nil, false
		}
		r.i++
	}
	if !sorted {
		slices.SortFunc(ms, func(a, b member) int { return bytes.Compare(a.key, b.key) })
		for j := 1; j < len(ms); j++ {
			if bytes.Equal(ms[j-1].key, ms[j].key) {
				return nil, false
			}
		}
		r.scratch = append(r.scratch[:0], out[body:]...)
		out = out[:body]
		for j, m := range ms {
			if j > 0 {
				out = append(out, ',')
			}
			out = append(out, r.scratch[m.start-body:m.end-body]...)
		}
	}
	return append(out, '}'), true
}

// str decodes the string at r.i. verbatim reports that its text, quotes
// included, is already canonical (no escape, valid UTF-8, no control
// character): the caller copies it as it stands, and s is that text without
// its quotes, a slice of the input.
func (r *rewriter) str() (s []byte, verbatim, ok bool) {
	r.i++ // "
	start := r.i
	ascii := true
	for r.i < len(r.in) {
		switch c := r.in[r.i]; {
		case c == '"':
			s := r.in[start:r.i]
			r.i++
			if !ascii && !utf8.Valid(s) {
				return nil, false, false
			}
			return s, true, true
		case c == '\\':
			s, ok := r.strEscaped(append([]byte(nil), r.in[start:r.i]...))
			return s, false, ok
		case c < 0x20:
			return nil, false, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		r.i++
	}
	return nil, false, false
}

func (r *rewriter) strEscaped(buf []byte) ([]byte, bool) {
	for r.i < len(r.in) {
		c := r.in[r.i]
		switch {
		case c == '"':
			r.i++
			if !utf8.Valid(buf) {
				return nil, false
			}
			return buf, true
		case c < 0x20:
			return nil, false
		case c != '\\':
			buf = append(buf, c)
			r.i++
			continue
		}
		// The escape as intent's and argcheck's fast paths read it; it gives
		// up on a surrogate, a pair or a lone half: the reference decides.
		var n int
		var ok bool
		if buf, n, ok = jsonscan.AppendEscape(buf, r.in[r.i:]); !ok {
			return nil, false
		}
		r.i += n
	}
	return nil, false
}
