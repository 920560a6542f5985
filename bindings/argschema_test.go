package bindings

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"

	"github.com/beam-agents/toolreg"
)

// shapeSpec is a tool whose params have one shape whatever desc says: desc
// describes the tool, every param and the nested schemas.
func shapeSpec(name, desc, pattern string) *toolreg.Spec {
	item := toolreg.Schema{Type: toolreg.TypeObject, Description: desc + " item",
		Properties: []*toolreg.Param{{Name: "sku", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: desc + " sku"}}}}
	return &toolreg.Spec{Name: name, Description: desc, Params: []*toolreg.Param{
		{Name: "customer_id", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: desc + " customer", Pattern: pattern}},
		{Name: "description", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: desc + " text"}, Optional: true},
		{Name: "items", Schema: toolreg.Schema{Type: toolreg.TypeArray, Description: desc + " items", Items: &item}, Optional: true},
		{Name: "meta", Schema: toolreg.Schema{Type: toolreg.TypeObject, Description: desc + " meta",
			AdditionalProperties: &toolreg.Schema{Type: toolreg.TypeInteger, Description: desc + " value"}}, Optional: true},
	}}
}

type shapeArgs struct {
	CustomerID  string           `json:"customer_id"`
	Description *string          `json:"description"`
	Items       []map[string]any `json:"items"`
	Meta        map[string]int   `json:"meta"`
}

// 10,000 tools with one shape of params compile one Checker, whatever their
// descriptions say; a different pattern is a different Checker.
func TestToolsOfOneShapeShareOneChecker(t *testing.T) {
	t.Parallel()
	a := mustDecoder[shapeArgs](t, shapeSpec("a", "Tool a.", "^cus_[a-z]+$"))
	b := mustDecoder[shapeArgs](t, shapeSpec("b", "Tool b, another.", "^cus_[a-z]+$"))
	if a.check != b.check {
		t.Error("two tools whose params differ only in descriptions compiled two Checkers")
	}
	c := mustDecoder[shapeArgs](t, shapeSpec("c", "Tool a.", "^ord_[a-z]+$"))
	if c.check == a.check {
		t.Fatal("two tools with different patterns shared one Checker")
	}
	if _, err := c.decode(json.RawMessage(`{"customer_id":"cus_x"}`)); err == nil {
		t.Error("the ^ord_ tool accepted cus_x: it checks with the ^cus_ tool's Checker")
	}
	if _, err := a.decode(json.RawMessage(`{"customer_id":"cus_x","description":"d","items":[{"sku":"s"}],"meta":{"k":1}}`)); err != nil {
		t.Errorf("a valid call was refused: %v", err)
	}
	if _, err := a.decode(json.RawMessage(`{"customer_id":"cus_x","description":3}`)); err == nil {
		t.Error("a number for the param named description was accepted")
	}
	runtime.KeepAlive(b)
}

func TestArgsSchemaDropsDescriptionsOnly(t *testing.T) {
	t.Parallel()
	spec := shapeSpec("a", "Tool a.", "^cus_[a-z]+$")
	before := spec.ParametersSchema()
	got := argsSchema(spec)
	if bytes.Contains(got, []byte("Tool a.")) {
		t.Errorf("argsSchema kept a description: %s", got)
	}
	if !bytes.Contains(got, []byte(`"description":{"type":"string"}`)) {
		t.Errorf("argsSchema dropped the param named description: %s", got)
	}
	if after := spec.ParametersSchema(); !bytes.Equal(after, before) {
		t.Errorf("argsSchema modified the spec: its schema was\n%s\nand is\n%s", before, after)
	}
	// Without descriptions the schema is the one the spec declares.
	var full, bare any
	if err := json.Unmarshal(before, &full); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &bare); err != nil {
		t.Fatal(err)
	}
	dropDescriptions(full)
	if f, b := mustJSON(t, full), mustJSON(t, bare); f != b {
		t.Errorf("argsSchema is not the parameters schema without descriptions:\n got %s\nwant %s", b, f)
	}
}

// dropDescriptions removes the description keyword from a decoded schema, at
// every level where a schema sits.
func dropDescriptions(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	delete(m, "description")
	if props, ok := m["properties"].(map[string]any); ok {
		for _, p := range props {
			dropDescriptions(p)
		}
	}
	dropDescriptions(m["items"])
	dropDescriptions(m["additionalProperties"])
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
