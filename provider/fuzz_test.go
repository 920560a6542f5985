package provider_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/provider"
)

// Whatever text a manifest carries (names, descriptions, enum values,
// patterns, formats), every form renders valid JSON or refuses the tool with
// an *UnsupportedError; it never panics.
func FuzzRenderAlwaysGivesJSON(f *testing.F) {
	f.Add("lookup_customer", "Look up a customer.", "id", "The id.", "open", "^c_[a-z]+$", "email", 3, true)
	f.Add("x", "", "", "", "", "", "", 0, false)
	f.Add("\u2028name\"", "desc\x00\ufffd</script>", "p\\q", "d\n\t", "\xff", "[", "uri", -1, true)
	f.Fuzz(func(t *testing.T, name, desc, param, pdesc, enum, pattern, format string, n int, optional bool) {
		minLen := n
		s := &toolreg.Spec{Name: name, Description: desc, Params: []*toolreg.Param{
			{Name: param, Optional: optional, Schema: toolreg.Schema{Type: toolreg.TypeString, Description: pdesc,
				Enum: []any{enum}, Pattern: pattern, Format: format, MinLength: &minLen, Default: enum, HasDefault: optional}},
			{Name: param + "_o", Schema: toolreg.Schema{Type: toolreg.TypeObject, Properties: []*toolreg.Param{
				{Name: param, Optional: optional, Schema: toolreg.Schema{Type: toolreg.TypeArray, Items: &toolreg.Schema{Type: toolreg.TypeInteger, Enum: []any{json.Number("1")}}}},
			}}},
		}}
		for _, form := range provider.Forms() {
			r, err := provider.Render(form, s)
			if err != nil {
				var ue *provider.UnsupportedError
				if !errors.As(err, &ue) {
					t.Fatalf("%s: %v", form, err)
				}
				continue
			}
			if !json.Valid(r.JSON) {
				t.Fatalf("%s rendered invalid JSON: %s", form, r.JSON)
			}
		}
		if _, err := provider.Vet(provider.OpenAIStrict, []*toolreg.Spec{s}); err != nil {
			t.Fatal(err)
		}
	})
}
