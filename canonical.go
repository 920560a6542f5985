package toolreg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// CanonicalJSON encodes v as beam-agents canonical JSON: object keys sorted,
// separators "," and ":" with no spaces, non-ASCII kept as UTF-8 rather than
// \u-escaped, and NaN or Infinity refused. It is what Intent.ArgsJSON and an OK
// Result's payload hold, so the same arguments always give the same bytes.
//
// v may be any value encoding/json can encode; it is encoded, decoded and
// re-encoded in canonical form.
func CanonicalJSON(v any) ([]byte, error) {
	switch v := v.(type) {
	case json.RawMessage:
		return Canonicalize(v)
	case []byte:
		// A []byte is encoded as JSON would (base64), like any other value.
	case nil, bool, string, json.Number, map[string]any, []any:
		return appendCanonical(nil, v)
	case float64:
		return appendCanonical(nil, v)
	}
	raw, err := marshalNoEscape(v)
	if err != nil {
		return nil, err
	}
	return Canonicalize(raw)
}

// Canonicalize rewrites JSON text in canonical form (see CanonicalJSON). It
// refuses text that is not one valid JSON value.
func Canonicalize(raw []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("canonical json: more than one value")
	}
	return appendCanonical(make([]byte, 0, len(raw)), v)
}

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func appendCanonical(b []byte, v any) ([]byte, error) {
	var err error
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		if v {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case string:
		return appendCanonicalString(b, v), nil
	case json.Number:
		return appendNumber(b, v)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("canonical json: %v is not a JSON number", v)
		}
		return appendNumber(b, json.Number(formatFloat(v)))
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendCanonical(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys) // Python sorts by code point; Go's string order is UTF-8 byte order, the same.
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonicalString(b, k)
			b = append(b, ':')
			if b, err = appendCanonical(b, v[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	raw, err := marshalNoEscape(v)
	if err != nil {
		return nil, err
	}
	return append(b, raw...), nil
}

// appendNumber writes a number as its JSON text. Integers keep every digit;
// other numbers are written as the shortest text that reads back the same.
func appendNumber(b []byte, n json.Number) ([]byte, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		return append(b, s...), nil
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) {
		return nil, fmt.Errorf("canonical json: %s is not a finite number", s)
	}
	return append(b, formatFloat(f)...), nil
}

// formatFloat writes f as Python's float repr does, which is what the Python
// runtime's json.dumps writes: the shortest digits that read back the same, in
// fixed notation with at least one decimal ("10.0") when the decimal exponent
// is in [-4, 16), and as "1.5e-05" or "1e+16" otherwise.
func formatFloat(f float64) string {
	e := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsRune(s, '.') {
		s += ".0"
	}
	return s
}

// appendCanonicalString quotes s as JSON, escaping only what JSON requires
// (quote, backslash, control characters) and keeping other text as UTF-8.
func appendCanonicalString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
