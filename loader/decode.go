package loader

import (
	"strconv"

	"github.com/beam-agents/toolreg"
)

// decodeSpec builds a Spec from a tool node that has passed the schema, so
// every key is known and every value has its schema's type.
func decodeSpec(n *node) *toolreg.Spec {
	s := &toolreg.Spec{Pos: n.pos}
	for i, k := range n.keys {
		v := n.vals[i]
		switch k {
		case "name":
			s.Name = v.text
		case "description":
			s.Description = v.text
		case "side_effect":
			s.SideEffect = v.text == "true"
		case "strict":
			s.Strict = v.text == "true"
		case "params":
			s.Params = decodeParams(v)
		case "annotations":
			s.Annotations = decodeAnnotations(v)
		case "tags":
			s.Tags = decodeStrings(v)
		case "keywords":
			s.Keywords = decodeStrings(v)
		}
	}
	return s
}

// decodeStrings returns a list of strings the schema has checked.
func decodeStrings(n *node) []string {
	out := make([]string, len(n.items))
	for i, it := range n.items {
		out[i] = it.text
	}
	return out
}

func decodeAnnotations(n *node) *toolreg.Annotations {
	a := &toolreg.Annotations{}
	for i, k := range n.keys {
		v := n.vals[i]
		switch k {
		case "title":
			a.Title = v.text
		case "destructiveHint":
			a.DestructiveHint = boolPtr(v)
		case "idempotentHint":
			a.IdempotentHint = boolPtr(v)
		case "openWorldHint":
			a.OpenWorldHint = boolPtr(v)
		}
	}
	return a
}

func decodeParams(n *node) []*toolreg.Param {
	ps := make([]*toolreg.Param, len(n.keys))
	for i, k := range n.keys {
		v := n.vals[i]
		p := &toolreg.Param{Name: k, Pos: n.kpos[i]}
		decodeSchema(v, &p.Schema)
		if r, _, ok := v.get("required"); ok && r.text == "false" {
			p.Optional = true
		}
		ps[i] = p
	}
	return ps
}

func decodeSchema(n *node, s *toolreg.Schema) {
	for i, k := range n.keys {
		v := n.vals[i]
		switch k {
		case "type":
			s.Type = toolreg.Type(v.text)
		case "description":
			s.Description = v.text
		case "default":
			s.Default, s.HasDefault = v.value(), true
		case "enum":
			s.Enum = v.value().([]any)
		case "minimum":
			s.Minimum = floatPtr(v)
		case "maximum":
			s.Maximum = floatPtr(v)
		case "exclusiveMinimum":
			s.ExclusiveMinimum = floatPtr(v)
		case "exclusiveMaximum":
			s.ExclusiveMaximum = floatPtr(v)
		case "multipleOf":
			s.MultipleOf = floatPtr(v)
		case "minLength":
			s.MinLength = intPtr(v)
		case "maxLength":
			s.MaxLength = intPtr(v)
		case "pattern":
			s.Pattern = v.text
		case "format":
			s.Format = v.text
		case "minItems":
			s.MinItems = intPtr(v)
		case "maxItems":
			s.MaxItems = intPtr(v)
		case "uniqueItems":
			s.UniqueItems = v.text == "true"
		case "items":
			s.Items = &toolreg.Schema{}
			decodeSchema(v, s.Items)
		case "properties":
			s.Properties = decodeParams(v)
		case "additionalProperties":
			s.AdditionalProperties = &toolreg.Schema{}
			decodeSchema(v, s.AdditionalProperties)
		}
	}
}

func boolPtr(n *node) *bool {
	b := n.text == "true"
	return &b
}

func floatPtr(n *node) *float64 {
	f, _ := strconv.ParseFloat(n.text, 64) // the schema made it a number
	return &f
}

func intPtr(n *node) *int {
	i, _ := strconv.Atoi(n.text) // the schema made it an int
	return &i
}
