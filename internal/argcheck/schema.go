package argcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
)

// node is the part of a JSON Schema that coercion, defaults and the fast
// decoder need to know; the jsonschema validator keeps the whole schema.
type node struct {
	typ string // "string", "integer", "number", "boolean", "array", "object", or "" (any)

	// object
	props    map[string]*node
	order    []string // property names, sorted: problems and plans come out in one order
	required map[string]bool
	addl     *node // schema of other members; nil with closed set
	closed   bool  // additionalProperties: false

	// array
	items  *node
	unique bool

	hasDefault bool
	def        any // decoded with UseNumber

	enum []any

	minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf *big.Rat

	length    limits // minLength, maxLength
	itemCount limits // minItems, maxItems

	pattern string
	format  string

	// exotic marks a keyword toolreg does not render (allOf, const,
	// minProperties ...): the validator enforces it, and the fast decoder,
	// which does not know it, leaves values of this node alone.
	exotic bool
}

// limits are a least and a greatest count (of characters, of items), each
// -1 when the schema sets none.
type limits struct{ min, max int }

func (l limits) allow(n int) bool {
	return (l.min < 0 || n >= l.min) && (l.max < 0 || n <= l.max)
}

// knownKeywords are the keywords toolreg renders and the checker knows.
var knownKeywords = map[string]bool{
	"$schema": true, "title": true, "description": true, "examples": true,
	"type": true, "default": true, "enum": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minLength": true, "maxLength": true, "pattern": true, "format": true,
	"minItems": true, "maxItems": true, "uniqueItems": true, "items": true,
	"properties": true, "required": true, "additionalProperties": true,
}

// parseSchema reads the subset of JSON Schema that toolreg's Spec renders.
func parseSchema(raw []byte) (*node, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("argcheck: parameters schema: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("argcheck: parameters schema is %s, not an object", describe(v))
	}
	return buildNode(m, "")
}

func buildNode(m map[string]any, at string) (*node, error) {
	n := &node{}
	for k := range m {
		if !knownKeywords[k] {
			n.exotic = true
		}
	}
	switch t := m["type"].(type) {
	case string:
		n.typ = t
	case nil:
	default:
		n.exotic = true // a list of types
	}
	if def, ok := m["default"]; ok {
		n.hasDefault, n.def = true, def
	}
	if e, ok := m["enum"].([]any); ok {
		n.enum = e
	}
	var err error
	rat := func(key string) *big.Rat {
		num, ok := m[key].(json.Number)
		if !ok {
			return nil
		}
		r, ok := new(big.Rat).SetString(string(num))
		if !ok {
			err = fmt.Errorf("argcheck: %s/%s: %s is not a number", at, key, num)
		}
		return r
	}
	n.minimum, n.maximum = rat("minimum"), rat("maximum")
	n.exclusiveMinimum, n.exclusiveMaximum = rat("exclusiveMinimum"), rat("exclusiveMaximum")
	n.multipleOf = rat("multipleOf")
	count := func(key string) int {
		num, ok := m[key].(json.Number)
		if !ok {
			return -1
		}
		i, e := num.Int64()
		if e != nil || i < 0 {
			err = fmt.Errorf("argcheck: %s/%s: %s is not a count", at, key, num)
			return -1
		}
		return int(i)
	}
	n.length = limits{count("minLength"), count("maxLength")}
	n.itemCount = limits{count("minItems"), count("maxItems")}
	if err != nil {
		return nil, err
	}
	n.pattern, _ = m["pattern"].(string)
	n.format, _ = m["format"].(string)
	n.unique, _ = m["uniqueItems"].(bool)

	if items, ok := m["items"].(map[string]any); ok {
		if n.items, err = buildNode(items, at+"/items"); err != nil {
			return nil, err
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		n.props = make(map[string]*node, len(props))
		for name, p := range props {
			pm, ok := p.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("argcheck: %s/properties/%s is not a schema object", at, name)
			}
			if n.props[name], err = buildNode(pm, at+"/properties/"+name); err != nil {
				return nil, err
			}
		}
		n.order = slices.Sorted(maps.Keys(props))
	}
	if req, ok := m["required"].([]any); ok {
		n.required = make(map[string]bool, len(req))
		for _, r := range req {
			if s, ok := r.(string); ok {
				n.required[s] = true
			}
		}
	}
	switch ap := m["additionalProperties"].(type) {
	case bool:
		n.closed = !ap
	case map[string]any:
		if n.addl, err = buildNode(ap, at+"/additionalProperties"); err != nil {
			return nil, err
		}
	}
	return n, nil
}
