package toolreg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/beam-agents/toolreg/internal/argcheck"
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
	// Anything after the value but space is refused, garbage as much as a
	// second value: Token returns io.EOF only at the end of the text.
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("canonical json: text after the value, at byte %d: pass exactly one JSON value", d.InputOffset())
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
		return argcheck.AppendCanonicalString(b, v), nil
	case json.Number:
		return appendNumber(b, v)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("canonical json: %v is not a JSON number", v)
		}
		return argcheck.AppendCanonicalFloat(b, v), nil
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
			b = argcheck.AppendCanonicalString(b, k)
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
	return argcheck.AppendCanonicalFloat(b, f), nil
}
