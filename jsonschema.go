package toolreg

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/beam-agents/toolreg/canonjson"
)

// appendSchema renders s as a JSON Schema object with keys in one fixed order,
// so a Spec always produces the same bytes. An object with properties, or with
// neither properties nor additionalProperties, is closed.
func appendSchema(b []byte, s *Schema) ([]byte, error) {
	b = append(b, '{')
	b, err := appendCommon(b, s)
	if err != nil {
		return nil, err
	}
	if s.Type == TypeObject {
		b = append(b, `,"properties":{`...)
		for i, p := range s.Properties {
			if i > 0 {
				b = append(b, ',')
			}
			b = canonjson.AppendString(b, p.Name)
			b = append(b, ':')
			if b, err = appendSchema(b, &p.Schema); err != nil {
				return nil, err
			}
		}
		b = append(b, `},"required":[`...)
		n := 0
		for _, p := range s.Properties {
			if p.Required() {
				if n > 0 {
					b = append(b, ',')
				}
				b = canonjson.AppendString(b, p.Name)
				n++
			}
		}
		b = append(b, ']')
	}
	if s.AdditionalProperties != nil {
		b = append(b, `,"additionalProperties":`...)
		if b, err = appendSchema(b, s.AdditionalProperties); err != nil {
			return nil, err
		}
	} else if s.Type == TypeObject {
		b = append(b, `,"additionalProperties":false`...)
	}
	return append(b, '}'), nil
}

// appendCommon writes type, description, default and the constraint keywords
// (everything but the object members), without the surrounding braces.
func appendCommon(b []byte, s *Schema) ([]byte, error) {
	b = append(b, `"type":`...)
	b = canonjson.AppendString(b, string(s.Type))
	if s.Description != "" {
		b = append(b, `,"description":`...)
		b = canonjson.AppendString(b, s.Description)
	}
	var err error
	if s.HasDefault {
		b = append(b, `,"default":`...)
		if b, err = appendValue(b, s.Default); err != nil {
			return nil, err
		}
	}
	if s.Enum != nil {
		b = append(b, `,"enum":`...)
		if b, err = appendValue(b, s.Enum); err != nil {
			return nil, err
		}
	}
	for _, n := range []struct {
		key string
		v   json.Number
	}{{"minimum", s.Minimum}, {"maximum", s.Maximum}, {"exclusiveMinimum", s.ExclusiveMinimum}, {"exclusiveMaximum", s.ExclusiveMaximum}, {"multipleOf", s.MultipleOf}} {
		if b, err = appendNum(b, n.key, n.v); err != nil {
			return nil, err
		}
	}
	b = appendInt(b, "minLength", s.MinLength)
	b = appendInt(b, "maxLength", s.MaxLength)
	if s.Pattern != "" {
		b = append(b, `,"pattern":`...)
		b = canonjson.AppendString(b, s.Pattern)
	}
	if s.Format != "" {
		b = append(b, `,"format":`...)
		b = canonjson.AppendString(b, s.Format)
	}
	b = appendInt(b, "minItems", s.MinItems)
	b = appendInt(b, "maxItems", s.MaxItems)
	if s.UniqueItems {
		b = append(b, `,"uniqueItems":true`...)
	}
	if s.Items != nil {
		b = append(b, `,"items":`...)
		if b, err = appendSchema(b, s.Items); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func appendNum(b []byte, key string, v json.Number) ([]byte, error) {
	if v == "" {
		return b, nil
	}
	if !validNumber(v) {
		return nil, fmt.Errorf("%s %q is not a JSON number", key, string(v))
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return append(b, v...), nil // as written: exact
}

func appendInt(b []byte, key string, v *int) []byte {
	if v == nil {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, int64(*v), 10)
}

func appendValue(b []byte, v any) ([]byte, error) {
	q, err := canonjson.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, q...), nil
}
