package toolsearch_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/provider"
	"github.com/beam-agents/toolreg/runner"
	"github.com/beam-agents/toolreg/toolsearch"
)

// search_tools finds only the tools its caller may call: the principal of
// its call (the context's, or the activation's), none holding no scope.
func TestSearchToolsFindsOnlyWhatItsCallerMayCall(t *testing.T) {
	t.Parallel()
	specs := []*toolreg.Spec{
		{Name: "refund_order", Description: "Refund an order.", SideEffect: true, Scopes: []string{"orders:refund"}},
		{Name: "refund_status", Description: "The status of an order's refund."},
		toolsearch.Spec(),
	}
	b := bindings.New(specs, bindings.PipelineOnly())
	if err := toolsearch.Bind(b, provider.OpenAI); err != nil {
		t.Fatal(err)
	}
	bindings.ReadOnly(b, "refund_status", func(context.Context, struct{}) (string, error) { return "none", nil })
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	found := func(p *toolreg.Principal) []string {
		t.Helper()
		opts := []runner.ActivationOption{runner.WithOffered(toolsearch.Name)}
		if p != nil {
			opts = append(opts, runner.WithPrincipal(p))
		}
		a := runner.NewActivation(bound.Pipeline, []byte("e"), 1, opts...)
		res, err := a.RunTool(context.Background(), toolsearch.Name, json.RawMessage(`{"query":"refund an order"}`))
		if err != nil {
			t.Fatal(err)
		}
		return res.(toolsearch.Result).FoundTools()
	}
	if got := found(nil); len(got) != 1 || got[0] != "refund_status" {
		t.Errorf("the anonymous caller found %v, want refund_status alone", got)
	}
	if got := found(&toolreg.Principal{Scopes: []string{"orders:read"}}); len(got) != 1 || got[0] != "refund_status" {
		t.Errorf("a caller without orders:refund found %v", got)
	}
	if got := found(&toolreg.Principal{Scopes: []string{"orders:refund"}}); len(got) != 2 || got[0] != "refund_order" {
		t.Errorf("a refunder found %v, want refund_order first, then refund_status", got)
	}
}
