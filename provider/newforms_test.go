package provider_test

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/provider"
)

// claudeStrictKeywords are the JSON Schema keywords Anthropic's strict tool use
// supports that toolreg can write (Structured outputs, "JSON Schema
// limitations"): no numeric bounds, no string lengths, no maxItems or
// uniqueItems.
var claudeStrictKeywords = []string{"type", "description", "enum", "default", "pattern", "format", "minItems",
	"items", "properties", "required", "additionalProperties"}

var claudeFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}

func walkClaudeStrict(t *testing.T, path string, v any) {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: schema %v is not an object", path, v)
	}
	for k := range m {
		if !slices.Contains(claudeStrictKeywords, k) {
			t.Errorf("%s: keyword %q is not supported by Anthropic's strict tool use", path, k)
		}
	}
	if n, ok := m["minItems"]; ok && fmt.Sprint(n) != "0" && fmt.Sprint(n) != "1" {
		t.Errorf("%s: minItems %v: strict tool use supports 0 and 1 only", path, n)
	}
	if f, ok := m["format"].(string); ok && !slices.Contains(claudeFormats, f) {
		t.Errorf("%s: format %q is not one strict tool use supports", path, f)
	}
	if p, ok := m["pattern"].(string); ok && (strings.Contains(p, `\b`) || strings.Contains(p, `\B`)) {
		t.Errorf("%s: pattern %q has a word boundary, which strict tool use refuses", path, p)
	}
	if e, ok := m["enum"].([]any); ok {
		for _, x := range e {
			switch x.(type) {
			case []any, map[string]any:
				t.Errorf("%s: enum holds the complex value %v", path, x)
			}
		}
	}
	if m["type"] == "object" {
		if m["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties is %v: strict tool use needs false on every object", path, m["additionalProperties"])
		}
		props, _ := m["properties"].(map[string]any)
		for _, k := range keys(props) {
			walkClaudeStrict(t, path+"."+k, props[k])
		}
	}
	if it, ok := m["items"]; ok {
		walkClaudeStrict(t, path+".items", it)
	}
}

func TestAnthropicStrictFormKeepsToTheSupportedSubset(t *testing.T) {
	t.Parallel()
	for _, s := range allSpecs(t) {
		r, err := provider.Render(provider.AnthropicStrict, s)
		if err != nil {
			continue // refused: see TestNewFormsRefuseWhatTheyCannotExpress
		}
		t.Run(s.Name+" uses only what strict tool use supports", func(t *testing.T) {
			t.Parallel()
			m := decode(t, r.JSON).(map[string]any)
			if m["strict"] != true {
				t.Errorf("strict is %v, want true", m["strict"])
			}
			walkClaudeStrict(t, "params", m["input_schema"])
		})
	}
	t.Run("optional params stay optional and unsupported keywords move into the description", func(t *testing.T) {
		t.Parallel()
		m := render(t, provider.AnthropicStrict, spec("lookup_customer"))["input_schema"].(map[string]any)
		if diff := cmp.Diff([]any{"customer_id"}, m["required"]); diff != "" {
			t.Errorf("required (-want +got):\n%s", diff)
		}
		props := m["properties"].(map[string]any)
		want := map[string]string{
			"customer_id": "The customer's id. (minLength: 3; maxLength: 40)",
			"limit":       "How many orders to return. (minimum: 1; maximum: 100)",
			"status":      "Only orders in this status.",
		}
		for p, d := range want {
			if got := props[p].(map[string]any)["description"]; got != d {
				t.Errorf("%s: description %q, want %q", p, got, d)
			}
		}
		if props["customer_id"].(map[string]any)["pattern"] != "^c_[a-z0-9]+$" {
			t.Errorf("the pattern, which strict tool use supports, is gone: %v", props["customer_id"])
		}
		if _, ok := props["status"].(map[string]any)["type"].(string); !ok {
			t.Errorf("an optional param was made nullable; strict tool use takes optional members as they are")
		}
	})
	t.Run("a word boundary moves the pattern into the description", func(t *testing.T) {
		t.Parallel()
		s := &toolreg.Spec{Name: "w", Description: "W.", Params: []*toolreg.Param{{Name: "a",
			Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "A.", Pattern: `^\bword\b$`}}}}
		p := render(t, provider.AnthropicStrict, s)["input_schema"].(map[string]any)["properties"].(map[string]any)["a"].(map[string]any)
		if _, ok := p["pattern"]; ok || p["description"] != `A. (pattern: "^\\bword\\b$")` {
			t.Errorf("got %v", p)
		}
		// An escaped backslash before b is a literal backslash and a b: kept.
		s.Params[0].Pattern = `^a\\b$`
		p = render(t, provider.AnthropicStrict, s)["input_schema"].(map[string]any)["properties"].(map[string]any)["a"].(map[string]any)
		if p["pattern"] != `^a\\b$` {
			t.Errorf(`^a\\b$ was moved: %v`, p)
		}
	})
}

// Gemini's JSON Schema support (Structured output, "JSON Schema support"):
// these keywords and, for format, three values.
var geminiJSONKeywords = map[string][]string{
	"":        {"type", "title", "description", "anyOf", "$ref", "$defs"},
	"string":  {"enum", "format"},
	"number":  {"enum", "minimum", "maximum"},
	"integer": {"enum", "minimum", "maximum"},
	"array":   {"items", "prefixItems", "minItems", "maxItems"},
	"object":  {"properties", "required", "additionalProperties"},
	"boolean": {},
}

func walkGeminiJSON(t *testing.T, path string, v any) {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: schema %v is not an object", path, v)
	}
	typ, _ := m["type"].(string)
	allowed, known := geminiJSONKeywords[typ]
	if !known {
		t.Fatalf("%s: type %v is not one Gemini's JSON Schema support lists", path, m["type"])
	}
	for k := range m {
		if !slices.Contains(geminiJSONKeywords[""], k) && !slices.Contains(allowed, k) {
			t.Errorf("%s: keyword %q is not in Gemini's JSON Schema subset for a %s", path, k, typ)
		}
	}
	if f, ok := m["format"].(string); ok && !slices.Contains([]string{"date-time", "date", "time"}, f) {
		t.Errorf("%s: format %q is not date-time, date or time", path, f)
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for _, k := range keys(props) {
			walkGeminiJSON(t, path+"."+k, props[k])
		}
	}
	if ap, ok := m["additionalProperties"].(map[string]any); ok {
		walkGeminiJSON(t, path+".additionalProperties", ap)
	}
	if it, ok := m["items"]; ok {
		walkGeminiJSON(t, path+".items", it)
	}
}

// There is no Gemini SDK in this module: the form is checked against the
// documented subset instead of a round trip.
func TestGeminiJSONSchemaFormKeepsToTheDocumentedSubset(t *testing.T) {
	t.Parallel()
	for _, s := range allSpecs(t) {
		r, err := provider.Render(provider.GeminiJSONSchema, s)
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		t.Run(s.Name+" uses only keywords of the subset", func(t *testing.T) {
			t.Parallel()
			m := decode(t, r.JSON).(map[string]any)
			want := []string{"description", "name"}
			if len(s.Params) > 0 {
				want = append(want, "parametersJsonSchema")
			}
			if diff := cmp.Diff(want, keys(m)); diff != "" {
				t.Errorf("top-level keys (-want +got):\n%s", diff)
			}
			if p, ok := m["parametersJsonSchema"]; ok {
				if p.(map[string]any)["type"] != "object" {
					t.Errorf("parametersJsonSchema must describe an object: %v", p)
				}
				walkGeminiJSON(t, "params", p)
			}
		})
	}
	t.Run("JSON Schema keeps what the OpenAPI subset cannot", func(t *testing.T) {
		t.Parallel()
		// An open map is JSON Schema's additionalProperties: the OpenAPI form
		// refuses it, this one takes it.
		p := render(t, provider.GeminiJSONSchema, spec("set_labels"))["parametersJsonSchema"].(map[string]any)
		labels := p["properties"].(map[string]any)["labels"].(map[string]any)
		if diff := cmp.Diff(map[string]any{"type": "string"}, labels["additionalProperties"]); diff != "" {
			t.Errorf("labels.additionalProperties (-want +got):\n%s", diff)
		}
		if p["additionalProperties"] != false {
			t.Errorf("the parameters object is not closed: %v", p["additionalProperties"])
		}
		// Integer enums and numeric bounds are kept; exclusive bounds and
		// formats other than date-time, date and time move.
		props := render(t, provider.GeminiJSONSchema, spec("send_invoice"))["parametersJsonSchema"].(map[string]any)["properties"].(map[string]any)
		if _, ok := props["priority"].(map[string]any)["enum"]; !ok {
			t.Errorf("the integer enum was dropped: %v", props["priority"])
		}
		for p, d := range map[string]string{
			"email":    `Where to send it. (format: "email")`,
			"amount":   `Amount due. (exclusiveMinimum: 0; multipleOf: 0.01)`,
			"priority": `default: 2`,
		} {
			if got := props[p].(map[string]any)["description"]; got != d {
				t.Errorf("%s: description %q, want %q", p, got, d)
			}
		}
	})
}

func TestNewFormsRefuseWhatTheyCannotExpress(t *testing.T) {
	t.Parallel()
	_, err := provider.Render(provider.AnthropicStrict, spec("set_labels"))
	var ue *provider.UnsupportedError
	if !errors.As(err, &ue) || len(ue.Problems) != 1 || ue.Problems[0].Path != "params.labels.additionalProperties" ||
		!strings.Contains(ue.Problems[0].Message, "additionalProperties: false") {
		t.Fatalf("Render(anthropic-strict, set_labels) = %v, want one problem at params.labels.additionalProperties", err)
	}
}

func TestVetChecksAnthropicStrictModesLimitsPerRequest(t *testing.T) {
	t.Parallel()
	tool := func(name string, optional int) *toolreg.Spec {
		s := &toolreg.Spec{Name: name, Description: "Does a thing.", Pos: toolreg.Pos{File: "m.yaml", Line: 1}}
		for i := range optional {
			s.Params = append(s.Params, &toolreg.Param{Name: fmt.Sprintf("o%d", i), Optional: true,
				Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "O."}})
		}
		return s
	}
	many := func(n, optional int) []*toolreg.Spec {
		var ss []*toolreg.Spec
		for i := range n {
			ss = append(ss, tool(fmt.Sprintf("t%d", i), optional))
		}
		return ss
	}
	tests := []struct {
		name  string
		specs []*toolreg.Spec
		want  []string
	}{
		{"20 strict tools are taken", many(20, 0), nil},
		{"21 strict tools are refused", many(21, 0), []string{"21 strict tools: Anthropic takes at most 20"}},
		{"24 optional params in all are taken", many(4, 6), nil},
		{"25 optional params in all are refused", append(many(4, 6), tool("x", 1)), []string{"25 optional params in all"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs, err := provider.Vet(provider.AnthropicStrict, tt.specs)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fs {
				if f.Severity == provider.Error {
					got = append(got, f.Message)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("errors %q, want %q", got, tt.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("error %q, want it to say %q", got[i], tt.want[i])
				}
			}
			// The plain form has no such limits.
			if fs, _ := provider.Vet(provider.Anthropic, tt.specs); slices.ContainsFunc(fs, func(f provider.Finding) bool { return f.Severity == provider.Error }) {
				t.Errorf("the plain anthropic form reports errors: %v", fs)
			}
		})
	}
}

func TestFormsListsTheNineForms(t *testing.T) {
	t.Parallel()
	got := provider.Forms()
	sort.Strings(got)
	want := []string{"anthropic", "anthropic-strict", "gemini", "gemini-jsonschema", "mcp", "openai", "openai-responses", "openai-strict", "openai-strict-responses"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Forms (-want +got):\n%s", diff)
	}
}
