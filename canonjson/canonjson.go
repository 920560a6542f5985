package canonjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Marshal returns the canonical JSON of v, which may be any value
// encoding/json can encode: a Go value is encoded by encoding/json (its tags,
// methods and embedded fields apply) and the text is then put in canonical
// form. A json.RawMessage is taken as JSON text, as Canonicalize takes it.
func Marshal(v any) ([]byte, error) {
	switch v := v.(type) {
	case json.RawMessage:
		return Canonicalize(v)
	case []byte:
		// A []byte is encoded as encoding/json encodes it (base64), like any
		// other value.
	case nil, bool, string, json.Number, float64, map[string]any, []any:
		return appendValue(nil, v)
	}
	if out, ok := encodeDirect(v); ok {
		return out, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonjson: %w", err)
	}
	return Canonicalize(raw)
}

// Canonicalize rewrites JSON text in canonical form. It refuses text that is
// not exactly one JSON value (space around it is allowed), saying where.
func Canonicalize(raw []byte) ([]byte, error) {
	if out, ok := rewrite(raw); ok {
		return out, nil
	}
	return canonicalizeReference(raw)
}

// AppendCanonical appends the canonical form of the JSON text raw to dst, as
// Canonicalize rewrites it, for a caller that keeps a buffer of its own (the
// effector digests every intent's arguments). On error dst is returned as it
// was given.
func AppendCanonical(dst, raw []byte) ([]byte, error) {
	r := rewriter{in: raw}
	if out, ok := r.value(dst, 0); ok && r.skipSpace() == len(raw) {
		return out, nil
	}
	canon, err := canonicalizeReference(raw)
	if err != nil {
		return dst, err
	}
	return append(dst, canon...), nil
}

// canonicalizeReference is Canonicalize's reference path: decode with
// encoding/json into generic values, numbers kept as their text, and write
// them out with appendValue.
func canonicalizeReference(raw []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonjson: %w", err)
	}
	// Anything after the value but space is refused, garbage as much as a
	// second value.
	if rest := bytes.TrimLeft(raw[d.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, fmt.Errorf("canonjson: text after the value, at byte %d: pass exactly one JSON value", len(raw)-len(rest))
	}
	return appendValue(make([]byte, 0, len(raw)), v)
}

// appendValue is the reference encoder: it writes a generic JSON value (what
// encoding/json decodes into an any, with or without UseNumber).
func appendValue(b []byte, v any) ([]byte, error) {
	var err error
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case string:
		return AppendString(b, v), nil
	case json.Number:
		out, ok := AppendNumber(b, string(v))
		if !ok {
			return nil, fmt.Errorf("canonjson: %q is not a finite JSON number", string(v))
		}
		return out, nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("canonjson: %v is not a JSON number", v)
		}
		return AppendFloat(b, v), nil
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendValue(b, e); err != nil {
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
			b = AppendString(b, k)
			b = append(b, ':')
			if b, err = appendValue(b, v[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	// Any other Go value inside a map or slice: encoding/json writes it.
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonjson: %w", err)
	}
	out, err := Canonicalize(raw)
	if err != nil {
		return nil, err
	}
	return append(b, out...), nil
}

// AppendString appends s as a canonical JSON string: only the quote, the
// backslash and control characters escaped, other text kept as UTF-8, each
// invalid byte written as the replacement character U+FFFD (as encoding/json
// and a decode-then-encode write it, so a string gives the same bytes
// wherever it stands).
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	// Text that needs no escape is copied a run at a time: s[start:i].
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, "\uFFFD"...)
				start = i + 1
			}
			i += size
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendFloat appends the finite f as Python's float repr writes it: the
// shortest digits that read back the same, in fixed notation with at least
// one decimal ("10.0") when the decimal exponent is in [-4, 16), and as
// "1.5e-05" or "1e+16" otherwise. It appends nothing for NaN or an infinity,
// which JSON cannot hold: callers refuse those first.
func AppendFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	exp, _ := strconv.Atoi(string(e[bytes.IndexByte(e, 'e')+1:]))
	if exp < -4 || exp >= 16 {
		return append(b, e...)
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'f', -1, 64)
	if bytes.IndexByte(b[start:], '.') < 0 {
		b = append(b, '.', '0')
	}
	return b
}

// AppendNumber appends the JSON number text num in canonical form: an integer
// (no fraction, no exponent) keeps every digit as written; any other number
// is written by AppendFloat. ok is false when num is not a finite number
// (an overflow such as 1e400 included), and nothing is appended.
func AppendNumber(b []byte, num string) (out []byte, ok bool) {
	if !strings.ContainsAny(num, ".eE") {
		if !isIntegerText(num) {
			return b, false
		}
		return append(b, num...), true
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(f, 0) {
		return b, false
	}
	return AppendFloat(b, f), true
}

// isIntegerText reports whether s is a JSON integer of any length.
func isIntegerText(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || s[0] == '0' && len(s) > 1 {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
