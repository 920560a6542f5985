package effector

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/argcheck"
)

// canonicalResult returns toolreg.CanonicalJSON(v), the payload of an OK
// result, byte for byte, in a fraction of its time for the values tool
// functions return (structs, maps of them). CanonicalJSON encodes v, decodes
// the text into maps and re-encodes them. canonicalResult first writes v
// with its type's cached encoder (canonenc.go), fields in key order, with no
// intermediate text; a type that needs encoding/json's own rules (a
// MarshalJSON method, an embedded field) is encoded with json.Marshal and
// the text rewritten in place: object members sorted by key, strings
// re-escaped, non-integer numbers re-formatted. Whatever that does not
// handle (a surrogate escape, a duplicate key) goes to CanonicalJSON's own
// path; FuzzCanonicalResult and FuzzCanonicalEncoder hold them to the same
// bytes.
func canonicalResult(v any) ([]byte, error) {
	switch v.(type) {
	case json.RawMessage, []byte, nil, bool, string, json.Number, float64, map[string]any, []any:
		// CanonicalJSON has its own path for these.
		return toolreg.CanonicalJSON(v)
	}
	if out, ok := encodeDirect(v); ok {
		return out, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	c := canonicalizer{in: raw}
	if out, ok := c.value(make([]byte, 0, len(raw))); ok && c.skipSpace() == len(raw) {
		return out, nil
	}
	return toolreg.Canonicalize(raw)
}

// canonicalizer rewrites JSON text that encoding/json wrote. On anything it
// does not expect it reports !ok, and the caller takes the slow path.
type canonicalizer struct {
	in      []byte
	i       int
	scratch []byte // where object reorders its members
}

type member struct {
	key        []byte // decoded
	start, end int    // the member's canonical text in the output
}

func (c *canonicalizer) skipSpace() int {
	for c.i < len(c.in) {
		switch c.in[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return c.i
		}
	}
	return c.i
}

func (c *canonicalizer) value(out []byte) ([]byte, bool) {
	if c.skipSpace() >= len(c.in) {
		return nil, false
	}
	switch b := c.in[c.i]; {
	case b == '{':
		return c.object(out)
	case b == '[':
		return c.array(out)
	case b == '"':
		s, ok := c.str(nil)
		if !ok {
			return nil, false
		}
		return argcheck.AppendCanonicalString(out, string(s)), true
	case b == 't':
		return c.literal(out, "true")
	case b == 'f':
		return c.literal(out, "false")
	case b == 'n':
		return c.literal(out, "null")
	case b == '-' || b >= '0' && b <= '9':
		return c.number(out)
	}
	return nil, false
}

func (c *canonicalizer) literal(out []byte, lit string) ([]byte, bool) {
	if !bytes.HasPrefix(c.in[c.i:], []byte(lit)) {
		return nil, false
	}
	c.i += len(lit)
	return append(out, lit...), true
}

func (c *canonicalizer) number(out []byte) ([]byte, bool) {
	start := c.i
	integer := true
	for c.i < len(c.in) {
		switch ch := c.in[c.i]; {
		case ch >= '0' && ch <= '9' || ch == '-' || ch == '+':
		case ch == '.' || ch == 'e' || ch == 'E':
			integer = false
		default:
			goto done
		}
		c.i++
	}
done:
	text := c.in[start:c.i]
	if integer {
		return append(out, text...), true
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, false // CanonicalJSON reports it
	}
	return argcheck.AppendCanonicalFloat(out, f), true
}

func (c *canonicalizer) array(out []byte) ([]byte, bool) {
	c.i++ // [
	out = append(out, '[')
	if c.skipSpace() < len(c.in) && c.in[c.i] == ']' {
		c.i++
		return append(out, ']'), true
	}
	for {
		var ok bool
		if out, ok = c.value(out); !ok {
			return nil, false
		}
		if c.skipSpace() >= len(c.in) {
			return nil, false
		}
		switch c.in[c.i] {
		case ',':
			c.i++
			out = append(out, ',')
		case ']':
			c.i++
			return append(out, ']'), true
		default:
			return nil, false
		}
	}
}

// object writes each member as it reads it, `"key":value`, and then, if the
// keys were not in order already (a struct's fields are in declaration
// order), moves the members into order: one pass over the input.
func (c *canonicalizer) object(out []byte) ([]byte, bool) {
	c.i++ // {
	out = append(out, '{')
	if c.skipSpace() < len(c.in) && c.in[c.i] == '}' {
		c.i++
		return append(out, '}'), true
	}
	var stack [8]member
	ms := stack[:0]
	body := len(out)
	sorted := true
	for {
		if c.skipSpace() >= len(c.in) || c.in[c.i] != '"' {
			return nil, false
		}
		key, ok := c.str(nil)
		if !ok || c.skipSpace() >= len(c.in) || c.in[c.i] != ':' {
			return nil, false
		}
		c.i++
		if n := len(ms); n > 0 {
			switch cmp := bytes.Compare(ms[n-1].key, key); {
			case cmp == 0:
				return nil, false // CanonicalJSON keeps the last; rare enough to leave to it
			case cmp > 0:
				sorted = false
			}
			out = append(out, ',')
		}
		start := len(out)
		out = argcheck.AppendCanonicalString(out, string(key))
		out = append(out, ':')
		if out, ok = c.value(out); !ok {
			return nil, false
		}
		ms = append(ms, member{key: key, start: start, end: len(out)})
		if c.skipSpace() >= len(c.in) {
			return nil, false
		}
		if c.in[c.i] == '}' {
			c.i++
			break
		}
		if c.in[c.i] != ',' {
			return nil, false
		}
		c.i++
	}
	if !sorted {
		slices.SortFunc(ms, func(a, b member) int { return bytes.Compare(a.key, b.key) })
		for j := 1; j < len(ms); j++ {
			if bytes.Equal(ms[j-1].key, ms[j].key) {
				return nil, false
			}
		}
		c.scratch = append(c.scratch[:0], out[body:]...)
		out = out[:body]
		for j, m := range ms {
			if j > 0 {
				out = append(out, ',')
			}
			out = append(out, c.scratch[m.start-body:m.end-body]...)
		}
	}
	return append(out, '}'), true
}

// str decodes the string at c.i. Without escapes it returns a slice of the
// input, copying nothing.
func (c *canonicalizer) str(buf []byte) ([]byte, bool) {
	c.i++ // "
	start := c.i
	for c.i < len(c.in) {
		switch ch := c.in[c.i]; {
		case ch == '"':
			s := c.in[start:c.i]
			c.i++
			if !utf8.Valid(s) {
				return nil, false
			}
			return s, true
		case ch == '\\':
			return c.strEscaped(append(buf, c.in[start:c.i]...))
		case ch < 0x20:
			return nil, false
		}
		c.i++
	}
	return nil, false
}

func (c *canonicalizer) strEscaped(buf []byte) ([]byte, bool) {
	for c.i < len(c.in) {
		ch := c.in[c.i]
		switch {
		case ch == '"':
			c.i++
			if !utf8.Valid(buf) {
				return nil, false
			}
			return buf, true
		case ch < 0x20:
			return nil, false
		case ch != '\\':
			buf = append(buf, ch)
			c.i++
			continue
		}
		if c.i+1 >= len(c.in) {
			return nil, false
		}
		switch e := c.in[c.i+1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			if c.i+6 > len(c.in) {
				return nil, false
			}
			r, err := strconv.ParseUint(string(c.in[c.i+2:c.i+6]), 16, 32)
			if err != nil || utf16.IsSurrogate(rune(r)) {
				return nil, false
			}
			buf = utf8.AppendRune(buf, rune(r))
			c.i += 4
		default:
			return nil, false
		}
		c.i += 2
	}
	return nil, false
}
