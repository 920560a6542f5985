package argcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// wantObject is what a call's arguments must be.
const wantObject = "one JSON object of arguments"

// sendOne ends every message about the arguments' JSON text.
const sendOne = "; send one JSON object and nothing else"

// maxExcerpt bounds the text quoted from before a syntax error.
const maxExcerpt = 40

// parseArgs decodes the arguments text, or says, in terms a model can act
// on, where and why it is not one JSON value.
func parseArgs(args []byte) (any, *Problem) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return map[string]any{}, nil
	}
	lead := len(args) - len(bytes.TrimLeftFunc(args, unicode.IsSpace)) // what TrimSpace cut
	d := json.NewDecoder(bytes.NewReader(trimmed))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, &Problem{Want: wantObject, Got: syntaxMessage(args, lead, err)}
	}
	end := d.InputOffset()
	if _, err := d.Token(); err != io.EOF {
		off := lead + int(end)
		// end is just past the first value; the next byte that is not
		// space is the one that should not be there.
		for off < len(args) && isJSONSpace(args[off]) {
			off++
		}
		return nil, &Problem{Want: wantObject, Got: at(args, off, "nothing after the arguments object")}
	}
	return v, nil
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// syntaxMessage turns encoding/json's error about args (decoded from lead
// bytes in) into where, what JSON wanted there, and what came.
func syntaxMessage(args []byte, lead int, err error) string {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// Offset counts the bytes read, the bad one included.
		return at(args, lead+int(se.Offset)-1, expected(se.Error()))
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := lineCol(args, len(args))
		return fmt.Sprintf("malformed JSON: the text ends at line %d, column %d (byte offset %d) before the value is complete: expected the rest of it (close every string, '[' and '{')%s",
			line, col, len(args), sendOne)
	}
	return "malformed JSON: " + err.Error() + sendOne
}

// at describes the byte at off of args, which JSON did not want there.
func at(args []byte, off int, want string) string {
	off = max(0, min(off, len(args)))
	line, col := lineCol(args, off)
	var b strings.Builder
	fmt.Fprintf(&b, "malformed JSON at line %d, column %d (byte offset %d)", line, col, off)
	if off > 0 {
		b.WriteString(", after `")
		b.WriteString(excerpt(args[:off]))
		b.WriteString("`")
	}
	b.WriteString(": expected ")
	b.WriteString(want)
	if off < len(args) {
		r, _ := utf8.DecodeRune(args[off:])
		b.WriteString(", found ")
		b.WriteString(strconv.QuoteRune(r))
	}
	b.WriteString(sendOne)
	return b.String()
}

// lineCol returns the 1-based line and column (in characters) of offset off.
func lineCol(args []byte, off int) (line, col int) {
	before := args[:off]
	line = 1 + bytes.Count(before, []byte{'\n'})
	if i := bytes.LastIndexByte(before, '\n'); i >= 0 {
		before = before[i+1:]
	}
	return line, 1 + utf8.RuneCount(before)
}

// excerpt returns at most maxExcerpt bytes from the end of b, whole
// characters only, with control characters escaped.
func excerpt(b []byte) string {
	cut := len(b) > maxExcerpt
	if cut {
		b = b[len(b)-maxExcerpt:]
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	var s strings.Builder
	if cut {
		s.WriteString("...")
	}
	for _, r := range string(b) {
		switch {
		case r == '\n':
			s.WriteString(`\n`)
		case r == '\r':
			s.WriteString(`\r`)
		case r == '\t':
			s.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || r == utf8.RuneError:
			fmt.Fprintf(&s, `\x%02x`, r)
		default:
			s.WriteRune(r)
		}
	}
	return s.String()
}

// expected says what JSON wanted, from encoding/json's syntax error text
// ("invalid character 'x' <context>").
func expected(msg string) string {
	ctx := msg
	if rest, ok := strings.CutPrefix(msg, "invalid character "); ok {
		// Skip the quoted character: 'x', or '\'' and the like.
		if i := strings.Index(rest[1:], "' "); i >= 0 {
			ctx = rest[i+3:]
		}
	}
	switch {
	case ctx == "looking for beginning of value":
		return "a JSON value (an object, an array, a string in double quotes, a number, true, false or null)"
	case ctx == "looking for beginning of object key string":
		return "a member name in double quotes, or '}'"
	case ctx == "after object key":
		return "':' after a member name"
	case ctx == "after object key:value pair":
		return "',' or '}' after a member's value"
	case ctx == "after array element":
		return "',' or ']' after an array element"
	case ctx == "after top-level value":
		return "nothing after the arguments object"
	case ctx == "in string literal":
		return `a character allowed in a string (write a newline or other control character as an escape, such as \n)`
	case ctx == "in string escape code":
		return `one of the escapes \" \\ \/ \b \f \n \r \t \uXXXX`
	case ctx == `in \u hexadecimal character escape`:
		return `four hexadecimal digits after \u`
	case ctx == "in numeric literal":
		return "a digit"
	case ctx == "after decimal point in numeric literal":
		return "a digit after the decimal point"
	case ctx == "in exponent of numeric literal":
		return "a digit in the exponent"
	case strings.HasPrefix(ctx, "in literal "):
		// in literal null (expecting 'u')
		lit, want, ok := strings.Cut(strings.TrimPrefix(ctx, "in literal "), " (expecting ")
		if ok {
			return strings.TrimSuffix(want, ")") + " to go on with the literal " + lit
		}
	}
	return "valid JSON (" + msg + ")"
}
