package bindings

import "github.com/beam-agents/toolreg"

// argsSchema is spec's parameters schema as the argument checker is compiled
// from: Spec.ParametersSchema with every description left out. Descriptions
// change no validation outcome, and without them the tools whose params have
// one shape render the same bytes, which argcheck.Compile finds in its cache
// by a hash of the bytes alone; with them, each tool's text differs and the
// cache must parse the schema to find the Checker it shares.
func argsSchema(spec *toolreg.Spec) []byte {
	root := toolreg.Schema{Type: toolreg.TypeObject, Properties: undescribed(spec.Params)}
	b, err := root.MarshalJSON()
	if err != nil {
		// An unencodable default or enum value: let ParametersSchema report
		// it as it always has.
		return spec.ParametersSchema()
	}
	return b
}

// undescribed copies params with their schemas' descriptions dropped, at
// every depth; the params themselves are not modified.
func undescribed(params []*toolreg.Param) []*toolreg.Param {
	if params == nil {
		return nil
	}
	out := make([]*toolreg.Param, len(params))
	for i, p := range params {
		q := *p
		undescribe(&q.Schema)
		out[i] = &q
	}
	return out
}

func undescribe(s *toolreg.Schema) {
	s.Description = ""
	if s.Items != nil {
		it := *s.Items
		undescribe(&it)
		s.Items = &it
	}
	if s.AdditionalProperties != nil {
		ap := *s.AdditionalProperties
		undescribe(&ap)
		s.AdditionalProperties = &ap
	}
	s.Properties = undescribed(s.Properties)
}
