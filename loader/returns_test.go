package loader_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/beam-agents/toolreg/loader"
)

// TestReturnsDecodeToTheResultSchema: a manifest's returns reaches
// Spec.Returns, and ResultSchema renders it as JSON Schema with properties in
// declaration order, required naming those without required: false, and the
// object closed; a tool without returns has none.
func TestReturnsDecodeToTheResultSchema(t *testing.T) {
	t.Parallel()
	specs, err := loader.LoadFS(os.DirFS(filepath.Join(corpus, "good")), "returns.yaml", "minimal.yaml", "cue_returns")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"get_order":    `{"type":"object","description":"The order.","properties":{"order_id":{"type":"string","pattern":"^ord_[0-9a-z_]+$"},"status":{"type":"string","enum":["open","shipped","refunded"]},"total_cents":{"type":"integer","minimum":0},"lines":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}},"required":["sku","qty"],"additionalProperties":false}},"note":{"type":"string"}},"required":["order_id","status","total_cents","lines"],"additionalProperties":false}`,
		"count_orders": `{"type":"integer","minimum":0}`,
		"get_status":   `{"type":"object","properties":{"status":{"type":"string","enum":["open","shipped"]},"eta":{"type":"string"}},"required":["status"],"additionalProperties":false}`,
		"get_time":     ``,
	}
	if len(specs) != len(want) {
		t.Fatalf("loaded %d tools, want %d", len(specs), len(want))
	}
	for _, s := range specs {
		if got := string(s.ResultSchema()); got != want[s.Name] {
			t.Errorf("%s: ResultSchema\n got %s\nwant %s", s.Name, got, want[s.Name])
		}
		if (s.Returns == nil) != (want[s.Name] == "") {
			t.Errorf("%s: Returns = %v", s.Name, s.Returns)
		}
	}
}
