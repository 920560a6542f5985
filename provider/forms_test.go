package provider_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/provider"
)

func spec(name string) *toolreg.Spec {
	for _, s := range fixtures() {
		if s.Name == name {
			return s
		}
	}
	panic("no fixture " + name)
}

func render(t *testing.T, form string, s *toolreg.Spec) map[string]any {
	t.Helper()
	r, err := provider.Render(form, s)
	if err != nil {
		t.Fatalf("Render(%s, %s): %v", form, s.Name, err)
	}
	return decode(t, r.JSON).(map[string]any)
}

// The plain forms carry the manifest's parameters schema unchanged, so the
// provider enforces exactly what toolreg validates.
func TestPlainFormsCarryTheContractUnchanged(t *testing.T) {
	t.Parallel()
	params := map[string]func(map[string]any) any{
		provider.OpenAI:          func(m map[string]any) any { return m["function"].(map[string]any)["parameters"] },
		provider.OpenAIResponses: func(m map[string]any) any { return m["parameters"] },
		provider.MCP:             func(m map[string]any) any { return m["inputSchema"] },
		provider.Anthropic:       func(m map[string]any) any { return m["input_schema"] },
	}
	for form, get := range params {
		for _, s := range allSpecs(t) {
			t.Run(form+" form of "+s.Name+" holds the manifest's parameters schema", func(t *testing.T) {
				t.Parallel()
				want := decode(t, s.ParametersSchema()).(map[string]any)
				if form == provider.Anthropic && len(want["required"].([]any)) == 0 {
					delete(want, "required") // Anthropic's SDK drops an empty list
				}
				if diff := cmp.Diff(any(want), get(render(t, form, s))); diff != "" {
					t.Errorf("(-manifest +form):\n%s", diff)
				}
			})
		}
	}
}

var strictKeywords = []string{"type", "description", "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
	"multipleOf", "pattern", "format", "minItems", "maxItems", "items", "properties", "required", "additionalProperties"}

// walkStrict checks the rules of OpenAI strict mode on schema s, the
// rendering of manifest schema m, at path.
func walkStrict(t *testing.T, path string, s map[string]any, m *toolreg.Schema, optional bool) {
	t.Helper()
	for k := range s {
		if !slices.Contains(strictKeywords, k) {
			t.Errorf("%s: keyword %q is not supported by strict mode", path, k)
		}
	}
	wantType := any(string(m.Type))
	if optional {
		wantType = []any{string(m.Type), "null"}
		if m.Enum != nil && !slices.Contains(s["enum"].([]any), nil) {
			t.Errorf("%s: nullable enum %v does not list null", path, s["enum"])
		}
	}
	if diff := cmp.Diff(wantType, s["type"]); diff != "" {
		t.Errorf("%s: type (-want +got):\n%s", path, diff)
	}
	if m.Items != nil {
		walkStrict(t, path+".items", s["items"].(map[string]any), m.Items, false)
	}
	if m.Type != toolreg.TypeObject {
		return
	}
	if s["additionalProperties"] != false {
		t.Errorf("%s: object not closed: additionalProperties is %v", path, s["additionalProperties"])
	}
	props, ok := s["properties"].(map[string]any)
	if !ok {
		t.Fatalf("%s: object without properties", path)
	}
	var names []any
	for _, p := range m.Properties {
		names = append(names, p.Name)
		walkStrict(t, path+"."+p.Name, props[p.Name].(map[string]any), &p.Schema, !p.Required())
	}
	if names == nil {
		names = []any{}
	}
	if diff := cmp.Diff(names, s["required"]); diff != "" {
		t.Errorf("%s: required must list every property (-want +got):\n%s", path, diff)
	}
}

func TestStrictFormClosesEveryObjectAndMakesOptionalParamsNullable(t *testing.T) {
	t.Parallel()
	for _, s := range allSpecs(t) {
		if _, err := provider.Render(provider.OpenAIStrict, s); err != nil {
			continue // refused: see TestFormsRefuseWhatTheyCannotExpress
		}
		t.Run(s.Name+" keeps strict mode's rules at every level", func(t *testing.T) {
			t.Parallel()
			walkStrict(t, "params", strictParams(t, s), &toolreg.Schema{Type: toolreg.TypeObject, Properties: s.Params}, false)
		})
	}
}

func TestStrictFormMovesUnsupportedKeywordsIntoTheDescription(t *testing.T) {
	t.Parallel()
	props := strictParams(t, spec("lookup_customer"))["properties"].(map[string]any)
	tests := []struct {
		param, want string
		gone        []string
	}{
		{"customer_id", "The customer's id. (minLength: 3; maxLength: 40)", []string{"minLength", "maxLength"}},
		{"limit", "How many orders to return. (null means not given; default: 10)", []string{"default"}},
		{"status", "Only orders in this status. (null means not given)", nil},
	}
	for _, tt := range tests {
		p := props[tt.param].(map[string]any)
		if p["description"] != tt.want {
			t.Errorf("%s: description %q, want %q", tt.param, p["description"], tt.want)
		}
		for _, k := range tt.gone {
			if _, ok := p[k]; ok {
				t.Errorf("%s: %s is still in the schema", tt.param, k)
			}
		}
	}
	r, err := provider.Render(provider.OpenAIStrict, spec("lookup_customer"))
	if err != nil {
		t.Fatal(err)
	}
	var moved []string
	for _, n := range r.Notes {
		if n.Action == provider.Moved {
			moved = append(moved, n.Path+" "+n.Keyword)
		}
	}
	want := []string{"params.customer_id minLength", "params.customer_id maxLength", "params.limit default"}
	if diff := cmp.Diff(want, moved); diff != "" {
		t.Errorf("the report of what moved (-want +got):\n%s", diff)
	}
}

func deep(levels int) *toolreg.Schema {
	s := &toolreg.Schema{Type: toolreg.TypeString, Description: "leaf"}
	for range levels {
		s = &toolreg.Schema{Type: toolreg.TypeObject, Description: "level", Properties: []*toolreg.Param{{Name: "next", Schema: *s}}}
	}
	return s
}

func TestFormsRefuseWhatTheyCannotExpress(t *testing.T) {
	t.Parallel()
	manyEnum := make([]any, 1001)
	for i := range manyEnum {
		manyEnum[i] = fmt.Sprint("v", i)
	}
	tests := []struct {
		name     string
		form     string
		spec     *toolreg.Spec
		wantPath string
		wantMsg  string
	}{
		{"an open map cannot be strict", provider.OpenAIStrict, spec("set_labels"),
			"params.labels.additionalProperties", "cannot be strict"},
		{"an open map cannot be strict in the Responses form either", provider.OpenAIStrictResponses, spec("set_labels"),
			"params.labels.additionalProperties", "cannot be strict"},
		{"objects nested eleven deep cannot be strict", provider.OpenAIStrict,
			&toolreg.Spec{Name: "deep", Description: "d", Params: []*toolreg.Param{{Name: "a", Schema: *deep(10)}}},
			"params.a.next.next.next.next.next.next.next.next.next", "strict mode allows 10 levels"},
		{"more than 1000 enum values cannot be strict", provider.OpenAIStrict,
			&toolreg.Spec{Name: "big", Description: "d", Params: []*toolreg.Param{{Name: "a", Schema: toolreg.Schema{Type: toolreg.TypeString, Enum: manyEnum}}}},
			"params", "1001 enum values"},
		{"gemini refuses an object without properties", provider.Gemini, spec("set_labels"),
			"params.labels", "no properties"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := provider.Render(tt.form, tt.spec)
			var ue *provider.UnsupportedError
			if !errors.As(err, &ue) {
				t.Fatalf("Render: %v, want an *UnsupportedError", err)
			}
			if !errors.Is(err, toolreg.ErrTool) {
				t.Errorf("errors.Is(err, toolreg.ErrTool) is false")
			}
			if len(ue.Problems) != 1 || ue.Problems[0].Path != tt.wantPath || !strings.Contains(ue.Problems[0].Message, tt.wantMsg) {
				t.Errorf("problems %+v, want one at %s saying %q", ue.Problems, tt.wantPath, tt.wantMsg)
			}
			if ue.Tool != tt.spec.Name || ue.Form != tt.form {
				t.Errorf("error names tool %q form %q", ue.Tool, ue.Form)
			}
		})
	}
	t.Run("ten levels deep can be strict", func(t *testing.T) {
		t.Parallel()
		s := &toolreg.Spec{Name: "deep", Description: "d", Params: []*toolreg.Param{{Name: "a", Schema: *deep(9)}}}
		if _, err := provider.Render(provider.OpenAIStrict, s); err != nil {
			t.Fatal(err)
		}
	})
}

// geminiRefused are keywords Gemini's function declaration schema does not take.
var geminiRefused = []string{"$schema", "title", "examples", "const", "exclusiveMinimum", "exclusiveMaximum",
	"multipleOf", "uniqueItems", "format", "additionalProperties"}

// geminiSchemaFields are the fields of Gemini's Schema object (the genai SDK's
// Schema JSON names); a function declaration's parameters may hold no others.
var geminiSchemaFields = []string{"anyOf", "default", "description", "enum", "example", "format", "items", "maxItems",
	"maxLength", "maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum", "nullable", "pattern",
	"properties", "propertyOrdering", "required", "title", "type"}

func walkGemini(t *testing.T, path string, v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k := range m {
		if !slices.Contains(geminiSchemaFields, k) {
			t.Errorf("%s: %q is not a field of Gemini's Schema", path, k)
		}
	}
	for _, k := range geminiRefused {
		if _, ok := m[k]; ok {
			t.Errorf("%s: gemini form holds %q", path, k)
		}
	}
	if e, ok := m["enum"]; ok && m["type"] != "string" {
		t.Errorf("%s: gemini form holds enum %v on a %v", path, e, m["type"])
	}
	if props, ok := m["properties"].(map[string]any); ok {
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkGemini(t, path+"."+k, props[k])
		}
	}
	walkGemini(t, path+".items", m["items"])
}

func TestGeminiFormKeepsToItsSubset(t *testing.T) {
	t.Parallel()
	for _, s := range allSpecs(t) {
		r, err := provider.Render(provider.Gemini, s)
		if err != nil {
			continue // refused: see TestFormsRefuseWhatTheyCannotExpress
		}
		t.Run(s.Name+" uses only keywords gemini takes", func(t *testing.T) {
			t.Parallel()
			m := decode(t, r.JSON).(map[string]any)
			if diff := cmp.Diff([]string{"description", "name", "parameters"}[:2+min(1, len(s.Params))], keys(m)); diff != "" {
				t.Errorf("top-level keys (-want +got):\n%s", diff)
			}
			walkGemini(t, "params", m["parameters"])
		})
	}
	t.Run("format and exclusive bounds move into the description", func(t *testing.T) {
		t.Parallel()
		props := render(t, provider.Gemini, spec("send_invoice"))["parameters"].(map[string]any)["properties"].(map[string]any)
		want := map[string]string{
			"email":    `Where to send it. (format: "email")`,
			"amount":   `Amount due. (exclusiveMinimum: 0; multipleOf: 0.01)`,
			"priority": `enum: [1,2,3]`,
		}
		for p, d := range want {
			if got := props[p].(map[string]any)["description"]; got != d {
				t.Errorf("%s: description %q, want %q", p, got, d)
			}
		}
	})
}

func keys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func TestMCPFormDerivesAnnotationsFromTheManifest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec *toolreg.Spec
		want mcp.ToolAnnotations
	}{
		{"a read-only tool without annotations is read-only and idempotent", spec("lookup_customer"),
			mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}},
		{"a read-only tool whose manifest says it is not idempotent is not", func() *toolreg.Spec {
			s := spec("lookup_customer")
			s.Annotations = &toolreg.Annotations{IdempotentHint: ptr(false), Title: "Look up", OpenWorldHint: ptr(false)}
			return s
		}(), mcp.ToolAnnotations{Title: "Look up", ReadOnlyHint: true, IdempotentHint: false, OpenWorldHint: ptr(false)}},
		{"a side-effecting tool carries the hints its manifest gives", spec("send_invoice"),
			mcp.ToolAnnotations{Title: "Send invoice", ReadOnlyHint: false, DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)}},
		{"a side-effecting tool without annotations is not read-only", spec("set_labels"),
			mcp.ToolAnnotations{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := provider.Render(provider.MCP, tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			var tool mcp.Tool
			if err := json.Unmarshal(r.JSON, &tool); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&tt.want, tool.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if tool.Name != tt.spec.Name || tool.InputSchema == nil {
				t.Errorf("name %q, inputSchema %v", tool.Name, tool.InputSchema)
			}
		})
	}
}

func TestRenderRefusesAnUnknownForm(t *testing.T) {
	t.Parallel()
	_, err := provider.Render("openia", spec("ping"))
	var ue *provider.UnknownFormError
	if !errors.As(err, &ue) || ue.Name != "openia" {
		t.Fatalf("Render: %v, want an *UnknownFormError naming openia", err)
	}
	if !strings.Contains(err.Error(), "openai-strict") {
		t.Errorf("the error does not list the known forms: %v", err)
	}
}
