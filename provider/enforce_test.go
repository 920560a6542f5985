package provider_test

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg/provider"
)

// constraintKeywords are the keywords a provider may or may not enforce.
var constraintKeywords = []string{"default", "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
	"multipleOf", "minLength", "maxLength", "pattern", "format", "minItems", "maxItems", "uniqueItems"}

// paramsOf returns a rendered tool's parameters schema, nil when it has none.
var paramsOf = map[string]func(map[string]any) any{
	provider.OpenAI:           func(m map[string]any) any { return m["function"].(map[string]any)["parameters"] },
	provider.OpenAIResponses:  func(m map[string]any) any { return m["parameters"] },
	provider.Anthropic:        func(m map[string]any) any { return m["input_schema"] },
	provider.Gemini:           func(m map[string]any) any { return m["parameters"] },
	provider.GeminiJSONSchema: func(m map[string]any) any { return m["parametersJsonSchema"] },
}

// keptKeywords lists "path keyword" for every constraint keyword in a
// rendered schema, with manifest paths (params.a, params.a.items, params.o.x).
func keptKeywords(path string, v any, out *[]string) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for _, k := range constraintKeywords {
		if _, ok := m[k]; ok {
			*out = append(*out, path+" "+k)
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for name, p := range props {
			keptKeywords(path+"."+name, p, out)
		}
	}
	keptKeywords(path+".items", m["items"], out)
}

// A form the provider does not enforce (no strict mode) keeps constraints
// only the model reads: each one is reported as a NotEnforced note, so no one
// believes the provider checks it, and no note names a keyword not kept.
func TestNonStrictFormsSayWhatTheProviderDoesNotEnforce(t *testing.T) {
	t.Parallel()
	for form, params := range paramsOf {
		for _, s := range allSpecs(t) {
			r, err := provider.Render(form, s)
			if err != nil {
				continue
			}
			t.Run(form+" form of "+s.Name+" notes every constraint it keeps", func(t *testing.T) {
				t.Parallel()
				var kept []string
				keptKeywords("params", params(decode(t, r.JSON).(map[string]any)), &kept)
				var noted []string
				tool := false
				for _, n := range r.Notes {
					if n.Action != provider.NotEnforced {
						continue
					}
					if n.Path == "params" && n.Keyword == "type" {
						tool = true
						continue
					}
					noted = append(noted, n.Path+" "+n.Keyword)
					if form == provider.Gemini && n.Keyword == "default" && !strings.Contains(n.Detail, "ignores") {
						t.Errorf("%s: gemini's note on default does not say gemini ignores it: %q", n.Path, n.Detail)
					}
				}
				sort.Strings(kept)
				sort.Strings(noted)
				if diff := cmp.Diff(kept, noted); diff != "" {
					t.Errorf("constraints kept but not noted as unenforced (-kept +noted):\n%s", diff)
				}
				if tool != (len(s.Params) > 0) {
					t.Errorf("tool-level note that types and required members are not enforced: %v, want %v", tool, len(s.Params) > 0)
				}
			})
		}
	}
}

func TestStrictFormsAndMCPNoteNothingAsUnenforced(t *testing.T) {
	t.Parallel()
	for _, form := range []string{provider.OpenAIStrict, provider.OpenAIStrictResponses, provider.AnthropicStrict, provider.MCP} {
		for _, s := range allSpecs(t) {
			r, err := provider.Render(form, s)
			if err != nil {
				continue
			}
			if i := slices.IndexFunc(r.Notes, func(n provider.Note) bool { return n.Action == provider.NotEnforced }); i >= 0 {
				t.Errorf("%s form of %s: %v", form, s.Name, r.Notes[i])
			}
		}
	}
}

func TestTheNotesOfAPlainFormNameTheProvider(t *testing.T) {
	t.Parallel()
	r, err := provider.Render(provider.Anthropic, spec("lookup_customer"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range r.Notes {
		got = append(got, n.Path+": "+n.Detail)
	}
	want := []string{
		"params: types, required members and closed objects kept but not enforced: anthropic holds arguments to the schema only in strict mode (the anthropic-strict form); toolreg checks every call",
		"params.customer_id: minLength: 3 kept but not enforced: anthropic holds arguments to the schema only in strict mode (the anthropic-strict form); toolreg checks every call",
		"params.customer_id: maxLength: 40 kept but not enforced: anthropic holds arguments to the schema only in strict mode (the anthropic-strict form); toolreg checks every call",
		`params.customer_id: pattern: "^c_[a-z0-9]+$" kept but not enforced: anthropic holds arguments to the schema only in strict mode (the anthropic-strict form); toolreg checks every call`,
		"params.limit: default: 10 kept but not enforced: anthropic holds arguments to the schema only in strict mode (the anthropic-strict form); toolreg checks every call",
		"params.limit: minimum: 1 kept but not enforced: anthropic holds arguments to the schema only in strict mode (the anthropic-strict form); toolreg checks every call",
		"params.limit: maximum: 100 kept but not enforced: anthropic holds arguments to the schema only in strict mode (the anthropic-strict form); toolreg checks every call",
		`params.status: enum: ["open","shipped"] kept but not enforced: anthropic holds arguments to the schema only in strict mode (the anthropic-strict form); toolreg checks every call`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}
