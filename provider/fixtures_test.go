package provider_test

import (
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
)

func ptr[T any](v T) *T { return &v }

// fixtures are Specs built in Go that use every keyword a manifest can declare,
// in the shapes that make forms differ.
func fixtures() []*toolreg.Spec {
	pos := func(line int) toolreg.Pos { return toolreg.Pos{File: "fixtures.yaml", Line: line, Col: 3} }
	return []*toolreg.Spec{
		{
			Name:        "lookup_customer",
			Description: "Look up a customer by id.",
			Pos:         pos(1),
			Params: []*toolreg.Param{
				{Name: "customer_id", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "The customer's id.", MinLength: ptr(3), MaxLength: ptr(40), Pattern: "^c_[a-z0-9]+$"}, Pos: pos(5)},
				{Name: "limit", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Description: "How many orders to return.", Default: json.Number("10"), HasDefault: true, Minimum: json.Number("1"), Maximum: json.Number("100")}, Pos: pos(9)},
				{Name: "status", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "Only orders in this status.", Enum: []any{"open", "shipped"}}, Optional: true, Pos: pos(14)},
			},
		},
		{
			Name:        "send_invoice",
			Description: "Email an invoice to a customer.",
			SideEffect:  true,
			Pos:         pos(20),
			Annotations: &toolreg.Annotations{Title: "Send invoice", DestructiveHint: ptr(false), IdempotentHint: ptr(true), OpenWorldHint: ptr(true)},
			Params: []*toolreg.Param{
				{Name: "email", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "Where to send it.", Format: "email"}, Pos: pos(25)},
				{Name: "amount", Schema: toolreg.Schema{Type: toolreg.TypeNumber, Description: "Amount due.", ExclusiveMinimum: json.Number("0"), MultipleOf: json.Number("0.01")}, Pos: pos(28)},
				{Name: "callback", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "URL to notify.", Format: "uri"}, Optional: true, Pos: pos(31)},
				{Name: "priority", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Enum: []any{json.Number("1"), json.Number("2"), json.Number("3")}, Default: json.Number("2"), HasDefault: true}, Pos: pos(34)},
			},
		},
		{
			Name:        "tag_items",
			Description: "Tag items in the catalogue.",
			Pos:         pos(40),
			Params: []*toolreg.Param{
				{Name: "items", Schema: toolreg.Schema{
					Type: toolreg.TypeArray, Description: "The items to tag.", MinItems: ptr(1), MaxItems: ptr(50), UniqueItems: true,
					Items: &toolreg.Schema{Type: toolreg.TypeObject, Properties: []*toolreg.Param{
						{Name: "sku", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "Stock keeping unit."}},
						{Name: "note", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "Free text."}, Optional: true},
					}},
				}, Pos: pos(44)},
				{Name: "tags", Schema: toolreg.Schema{Type: toolreg.TypeArray, Items: &toolreg.Schema{Type: toolreg.TypeString, Enum: []any{"new", "sale"}}, Default: []any{}, HasDefault: true}, Pos: pos(50)},
			},
		},
		{
			Name:        "ping",
			Description: "Check the service is up.",
			Pos:         pos(60),
		},
		{
			Name:        "set_labels",
			Description: "Replace a record's labels.",
			SideEffect:  true,
			Pos:         pos(70),
			Params: []*toolreg.Param{
				{Name: "record", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "Record id."}, Pos: pos(74)},
				{Name: "labels", Schema: toolreg.Schema{Type: toolreg.TypeObject, Description: "Label name to value.", AdditionalProperties: &toolreg.Schema{Type: toolreg.TypeString}}, Pos: pos(77)},
			},
		},
	}
}

var manifestSpecs = sync.OnceValues(func() ([]*toolreg.Spec, error) {
	return loader.Load(filepath.Join("..", "manifests"))
})

// allSpecs are the Go fixtures and every tool in the module's manifests/.
func allSpecs(t *testing.T) []*toolreg.Spec {
	t.Helper()
	ms, err := manifestSpecs()
	if err != nil {
		t.Fatal(err)
	}
	return append(fixtures(), ms...)
}
