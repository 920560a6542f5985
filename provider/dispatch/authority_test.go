package dispatch_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/provider/dispatch"
	"github.com/beam-agents/toolreg/runner"
)

type orderArgs struct {
	OrderID string `json:"order_id"`
}

// A model's call of a tool its user may not call, or over a budget, is
// refused with the reason, worded for the model, and nothing runs or is
// staged; the other calls of the response go on.
func TestACallWithoutItsScopesOrOverItsBudgetIsRefusedToTheModel(t *testing.T) {
	t.Parallel()
	id := toolreg.Param{Name: "order_id", Schema: toolreg.Schema{Type: toolreg.TypeString}}
	b := bindings.New([]*toolreg.Spec{
		{Name: "read_order", Description: "Read.", Params: []*toolreg.Param{&id}, Budgets: &toolreg.Budgets{PerActivation: 1}},
		{Name: "refund_order", Description: "Refund.", SideEffect: true, Params: []*toolreg.Param{&id}, Scopes: []string{"orders:refund"}},
	})
	var reads atomic.Int64
	bindings.ReadOnly(b, "read_order", func(context.Context, orderArgs) (string, error) { reads.Add(1); return "shipped", nil })
	bindings.Effect(b, "refund_order", func(context.Context, orderArgs) (bool, error) { return true, nil })
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	act := runner.NewActivation(bound.Pipeline, []byte("ticket-1"), 1,
		runner.WithClock(func() time.Time { return time.Unix(1700000000, 0) }),
		runner.WithPrincipal(&toolreg.Principal{Subject: "ana", Scopes: []string{"orders:read"}}))
	outs, err := dispatch.Dispatch(context.Background(), act, []dispatch.Call{
		{ID: "c1", Name: "read_order", Args: json.RawMessage(`{"order_id":"o1"}`)},
		{ID: "c2", Name: "read_order", Args: json.RawMessage(`{"order_id":"o2"}`)},
		{ID: "c3", Name: "refund_order", Args: json.RawMessage(`{"order_id":"o1"}`)},
	})
	if err != nil {
		t.Fatalf("Dispatch = %v; a call the user may not make is the model's to hear, not a failed response", err)
	}
	if got := strings.Join(statuses(outs), ", "); got != "c1 ran, c2 refused, c3 refused" {
		t.Fatalf("outcomes %s", got)
	}
	if !strings.Contains(outs[1].Text, "per_activation") || !strings.Contains(outs[1].Text, "next activation") {
		t.Errorf("the answer over the budget = %q, want the budget and when it frees", outs[1].Text)
	}
	if !strings.Contains(outs[2].Text, `"orders:refund"`) || !outs[2].IsError {
		t.Errorf("the answer without the scope = %q (isError %v), want the missing scope", outs[2].Text, outs[2].IsError)
	}
	if reads.Load() != 1 {
		t.Errorf("read_order ran %d times, want 1", reads.Load())
	}
	if got := drained(t, act); len(got) != 0 {
		t.Errorf("staged %v for a caller without the scope", got)
	}
}
