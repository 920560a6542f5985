package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/mcpserver"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

const returnsManifests = `
name: quote
description: Quote a shipment.
params:
  sku: {type: string}
  broken: {type: boolean, default: false}
returns:
  type: object
  properties:
    sku: {type: string}
    price_cents: {type: integer, minimum: 0}
    currency: {type: string, enum: [EUR, USD]}
    eta_days: {type: integer, required: false}
---
name: book
description: Book a shipment.
side_effect: true
params:
  sku: {type: string}
returns:
  type: object
  properties:
    booking_id: {type: string, pattern: "^bk_"}
    sku: {type: string}
---
name: count
description: Count shipments.
returns:
  type: integer
  minimum: 0
`

type quoteIn struct {
	SKU    string `json:"sku"`
	Broken bool   `json:"broken"`
}

type quoteOut struct {
	SKU        string `json:"sku"`
	PriceCents int    `json:"price_cents"`
	Currency   string `json:"currency"`
	EtaDays    *int   `json:"eta_days,omitempty"`
}

type bookIn struct {
	SKU string `json:"sku"`
}

type bookOut struct {
	BookingID string `json:"booking_id"`
	SKU       string `json:"sku"`
}

func returnsServer(t *testing.T) *mcp.ClientSession {
	t.Helper()
	specs, err := loader.LoadFS(fstest.MapFS{"tools.yaml": {Data: []byte(returnsManifests)}}, "tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := bindings.New(specs)
	bindings.ReadOnly(b, "quote", func(_ context.Context, a quoteIn) (quoteOut, error) {
		if a.Broken {
			return quoteOut{SKU: a.SKU, PriceCents: -1, Currency: "GBP"}, nil
		}
		eta := 3
		return quoteOut{SKU: a.SKU, PriceCents: 1250, Currency: "EUR", EtaDays: &eta}, nil
	})
	bindings.Effect(b, "book", func(_ context.Context, a bookIn) (bookOut, error) {
		return bookOut{BookingID: "bk_1", SKU: a.SKU}, nil
	})
	bindings.ReadOnly(b, "count", func(context.Context, struct{}) (int, error) { return 7, nil })
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	eff, err := effector.New(bound.Effector, effector.NewMemoryStore())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(bound, eff)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{srv: srv}
	return f.client(t)
}

// TestToolsListCarriesEachObjectResultAsOutputSchema: tools/list gives
// outputSchema for each tool whose returns is an object, as the golden file
// holds it, and none for a tool whose result is not an object (MCP's
// structuredContent is always one).
func TestToolsListCarriesEachObjectResultAsOutputSchema(t *testing.T) {
	t.Parallel()
	cs := returnsServer(t)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool.OutputSchema
	}
	out, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, '\n')
	golden := filepath.Join("testdata", "output_schema.golden.json")
	if *update {
		if err := os.WriteFile(golden, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(want, out) {
		t.Errorf("outputSchema of tools/list:\n%s\nwant (%s):\n%s", out, golden, want)
	}
	if got["count"] != nil {
		t.Errorf("count, whose result is an integer, has outputSchema %v", got["count"])
	}
}

// TestEveryStructuredContentValidatesAgainstItsOutputSchema: the results of
// an inline call and of an effect, read by an SDK client, validate against
// the outputSchema tools/list gave (checked by an independent JSON Schema
// validator); an off-contract result comes back as an isError result with
// no structured content.
func TestEveryStructuredContentValidatesAgainstItsOutputSchema(t *testing.T) {
	t.Parallel()
	cs := returnsServer(t)
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Schema{}
	for _, tool := range list.Tools {
		if tool.OutputSchema == nil {
			continue
		}
		raw, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(tool.Name+".json", doc); err != nil {
			t.Fatal(err)
		}
		if schemas[tool.Name], err = c.Compile(tool.Name + ".json"); err != nil {
			t.Fatal(err)
		}
	}
	for _, call := range []struct {
		tool string
		args map[string]any
	}{{"quote", map[string]any{"sku": "A1"}}, {"book", map[string]any{"sku": "A1"}}} {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: call.tool, Arguments: call.args})
		if err != nil {
			t.Fatal(err)
		}
		if r.IsError || r.StructuredContent == nil {
			t.Fatalf("%s: isError %v, structuredContent %v", call.tool, r.IsError, r.StructuredContent)
		}
		raw, _ := json.Marshal(r.StructuredContent)
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas[call.tool].Validate(v); err != nil {
			t.Errorf("%s: structuredContent %s does not validate against its outputSchema: %v", call.tool, raw, err)
		}
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "quote", Arguments: map[string]any{"sku": "A1", "broken": true}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || r.StructuredContent != nil {
		t.Errorf("an off-contract result reached the client: isError %v, structuredContent %v", r.IsError, r.StructuredContent)
	}
	if got := text(t, r); !bytes.Contains([]byte(got), []byte("/price_cents: want at least 0, got -1")) {
		t.Errorf("isError text %q does not name the failing path", got)
	}
}
