// Package jsonscan holds the steps of toolreg's strict JSON scanners: the
// fast paths that read one known shape of JSON text (the intent wire object
// in package intent, a tool's arguments in internal/argcheck) and give up on
// anything they are not sure of, so that their encoding/json path decides.
//
// Each step reads the text b from offset i and returns the offset after what
// it read. It accepts only text that encoding/json accepts, and reads from
// it what encoding/json reads. A step that reports !ok means "give up", never
// "invalid": it may refuse valid JSON it does not handle (a surrogate escape,
// invalid UTF-8, an escaped key ...), and the offset it then returns is of
// no use to the caller, which gives up too. The shape of the object, and what a
// value means to it, stays with the caller, whose scanner holds b and i and
// calls these steps.
package jsonscan

import (
	"unicode/utf16"
	"unicode/utf8"
)

// WS returns the offset of the first byte at or after i that is not JSON
// whitespace (no other Unicode space is).
func WS(b []byte, i int) int {
	for i < len(b) && spaces>>b[i]&1 != 0 { // a shift by 64 or more is 0
		i++
	}
	return i
}

// spaces has the bits of JSON's whitespace bytes: a test without a load,
// that costs the inliner little, so the steps that skip whitespace twice
// stay inlinable.
const spaces uint64 = 1<<' ' | 1<<'\t' | 1<<'\n' | 1<<'\r'

// Open reads the bracket that opens an object or array ('{' or '[') and the
// whitespace after it. more is false when the container is empty: its
// closing bracket came at once, and is read too.
func Open(b []byte, i int, opening, closing byte) (next int, more, ok bool) {
	if i >= len(b) || b[i] != opening {
		return i, false, false
	}
	i = WS(b, i+1)
	if i < len(b) && b[i] == closing {
		return i + 1, false, true
	}
	return i, true, true
}

// Next reads what follows a member or an item: whitespace, then a comma and
// the whitespace after it (more), or the closing bracket (!more). Anything
// else is !ok.
func Next(b []byte, i int, closing byte) (next int, more, ok bool) {
	i = WS(b, i)
	switch {
	case i >= len(b):
	case b[i] == ',':
		return WS(b, i+1), true, true
	case b[i] == closing:
		return i + 1, false, true
	}
	return i, false, false
}

// Colon reads the colon after an object key, with the whitespace around it.
func Colon(b []byte, i int) (next int, ok bool) {
	if i = WS(b, i); i < len(b) && b[i] == ':' {
		return WS(b, i+1), true
	}
	return i, false
}

// Literal reads word (true, false or null) if it comes next, followed by a
// delimiter or the end.
func Literal(b []byte, i int, word string) (next int, ok bool) {
	end := i + len(word)
	if end > len(b) || string(b[i:end]) != word {
		return i, false
	}
	if end < len(b) && !isDelim(b[end]) {
		return i, false
	}
	return end, true
}

// isDelim reports whether c may follow a literal or a number.
func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', '}', ']', ':':
		return true
	}
	return false
}

// Plain reads a string of ASCII without escapes or control characters (an
// object key, a name), which means itself; v is its text, a part of b. It gives up on any
// other string, leaving one that needs decoding to the caller's
// encoding/json path.
func Plain(b []byte, i int) (v []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return nil, i, false
		}
	}
	return nil, i, false
}

// Str reads a string and decodes it. v is its text; owned says whether v is
// a new slice, which no one else holds (the string had escapes or non-ASCII
// text), or a part of b. It gives up on a \u escape of a surrogate (a pair,
// or a lone half encoding/json replaces) and on invalid UTF-8 (which
// encoding/json replaces), as on anything that is not a string.
func Str(b []byte, i int) (v []byte, next int, owned, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false, false
	}
	start := i + 1
	j := start
	for j < len(b) {
		c := b[j]
		if c == '"' {
			return b[start:j], j + 1, false, true
		}
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			break
		}
		j++
	}
	end := j // find the closing quote, to size the buffer
	for end < len(b) && b[end] != '"' {
		if b[end] == '\\' {
			end++
		}
		end++
	}
	buf := make([]byte, j-start, max(end-start, j-start))
	copy(buf, b[start:j])
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"':
			return buf, j + 1, true, true
		case c == '\\':
			if j+1 < len(b) && unescaped[b[j+1]] != 0 { // the common escapes, without a call
				buf = append(buf, unescaped[b[j+1]])
				j += 2
				continue
			}
			var n int
			if buf, n, ok = AppendEscape(buf, b[j:]); !ok {
				return nil, i, false, false
			}
			j += n
		case c < 0x20:
			return nil, i, false, false
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			j++
		default:
			r, size := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && size == 1 { // encoding/json replaces it
				return nil, i, false, false
			}
			buf = append(buf, b[j:j+size]...)
			j += size
		}
	}
	return nil, i, false, false
}

// AppendEscape decodes the escape sequence that e starts with (e[0] is the
// backslash) onto buf, returning buf and the length of the sequence. It
// gives up (!ok) on an escape JSON does not define and on a \u escape of a
// surrogate, which encoding/json reads as half of a pair or replaces with
// U+FFFD.
func AppendEscape(buf, e []byte) (_ []byte, n int, ok bool) {
	if len(e) < 2 {
		return buf, 0, false
	}
	if u := unescaped[e[1]]; u != 0 {
		return append(buf, u), 2, true
	}
	if e[1] != 'u' {
		return buf, 0, false
	}
	r, ok := hex4(e[2:])
	if !ok || utf16.IsSurrogate(r) {
		return buf, 0, false
	}
	return utf8.AppendRune(buf, r), 6, true
}

// unescaped maps the byte after a backslash to what the escape means, for
// the escapes of one byte JSON defines; it is 0 for every other byte (\u0000
// is written with \u).
var unescaped = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Number reads a number by the grammar of RFC 8259, which must be followed
// by a delimiter or the end; its text is b[i:next]. isInt says it is
// written as an integer, without fraction or exponent.
func Number(b []byte, i int) (next int, isInt, ok bool) {
	next, isInt, _, _ = number(b, i)
	if next < 0 {
		return i, false, false
	}
	return next, isInt, true
}

// Int reads a number written as an integer of at most 19 digits, so that its
// magnitude fits a uint64; neg says it has a minus sign (-0 has one). It
// gives up on any other number.
func Int(b []byte, i int) (mag uint64, neg bool, next int, ok bool) {
	next, ok, neg, mag = number(b, i) // !ok (isInt) when there is no number
	if !ok || mag == tooLong {
		return 0, false, i, false
	}
	return
}

// tooLong is number's mag for an integer part of more than 19 digits; it has
// 20, so no shorter one has this value.
const tooLong = 1<<64 - 1

// number walks the number at i: next is where it ends (-1 when there is
// none), neg whether it has a minus sign, mag the value of its integer part,
// or tooLong when that has more than 19 digits.
func number(b []byte, i int) (next int, isInt, neg bool, mag uint64) {
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			mag = mag*10 + uint64(b[i]-'0')
			i++
		}
		if i-d > 19 {
			mag = tooLong
		}
	default:
		return -1, false, false, 0
	}
	isInt = true
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return -1, false, false, 0
		}
		isInt = false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return -1, false, false, 0
		}
		isInt = false
	}
	if i < len(b) && !isDelim(b[i]) {
		return -1, false, false, 0
	}
	return i, isInt, neg, mag
}
