package remote

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
)

// FuzzSameAgreesWithFlatten holds the fast equality that startup takes for
// a tool that did not drift to the field-by-field list it stands for: two
// served forms are the same contract exactly when flattening them lists no
// difference.
func FuzzSameAgreesWithFlatten(f *testing.F) {
	seeds := []string{
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^x$","minLength":1}},"required":["a"],"additionalProperties":false}`,
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^y$","minLength":1}},"required":["a"],"additionalProperties":false}`,
		`{"type":"object","properties":{"a":{"type":"integer","minimum":1,"maximum":10.0,"default":3}},"additionalProperties":false}`,
		`{"type":"object","properties":{"a":{"type":"integer","minimum":1,"maximum":1e1,"default":3}},"additionalProperties":false}`,
		`{"type":"object","properties":{"b":{"type":"array","items":{"type":"object","properties":{"c":{"type":"number","enum":[1,2]}},"additionalProperties":false}}},"additionalProperties":false}`,
		`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"boolean"}},"z":{"type":"string"}},"required":["z"]}`,
	}
	for _, a := range seeds {
		for _, b := range seeds {
			f.Add(a, b, "d", "d", false)
			f.Add(a, b, "d", "e", true)
		}
	}
	f.Fuzz(func(t *testing.T, a, b, descA, descB string, hint bool) {
		sa, ok := served1(a, descA, false)
		if !ok {
			return
		}
		sb, ok := served1(b, descB, hint)
		if !ok {
			return
		}
		spec := toSpec(&toolreg.Spec{Name: "t", Remote: &toolreg.Remote{Server: "s", Tool: "t"}}, sa)
		fa, fb := flatten(spec), flatten(toSpec(spec, sb))
		equal := len(fa) == len(fb)
		for k, v := range fa {
			if w, ok := fb[k]; !ok || w.cmp != v.cmp {
				equal = false
			}
		}
		if got := same(spec, sb); got != equal {
			t.Fatalf("same = %v, flatten lists them as equal = %v:\n%s\n%s", got, equal, a, b)
		}
		if got := len(compare(spec, sb)) == 0; got != equal {
			t.Fatalf("compare finds no drift = %v, want %v", got, equal)
		}
	})
}

func served1(schema, desc string, readOnly bool) (*served, bool) {
	if !json.Valid([]byte(schema)) {
		return nil, false
	}
	s, refusals, _ := fromMCP(&mcp.Tool{Name: "t", Description: desc, InputSchema: json.RawMessage(schema),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly}})
	return s, len(refusals) == 0
}
