package dispatch_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/provider/dispatch"
	"github.com/beam-agents/toolreg/runner"
)

// TestACallOutsideTheOfferedSetIsRefusedNeverRun: a turn that offered the
// model only lookup_customer answers a call of any other tool, read-only or
// side-effecting, with the model-facing refusal, and nothing runs or is
// staged; the offered call still runs.
func TestACallOutsideTheOfferedSetIsRefusedNeverRun(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	act := a.activation(runner.WithOffered("lookup_customer"))
	outs, err := dispatch.Dispatch(context.Background(), act, []dispatch.Call{
		call("call_1", "search_orders", `{"customer_id":"cus_ada"}`),
		call("call_2", "refund_order", `{"order_id":"ord_1","amount":5}`),
		call("call_3", "lookup_customer", `{"customer_id":"cus_ada"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs[:2] {
		var notOffered *toolreg.ToolNotOfferedError
		if o.Status != dispatch.Refused || !o.IsError || !errors.As(o.Err, &notOffered) {
			t.Fatalf("call %s: outcome %v, %v; want Refused with a *toolreg.ToolNotOfferedError", o.Call.ID, o.Status, o.Err)
		}
		if o.Text != notOffered.ModelMessage() {
			t.Errorf("call %s: the model is told %q; want the error's ModelMessage %q", o.Call.ID, o.Text, notOffered.ModelMessage())
		}
	}
	if outs[2].Status == dispatch.Refused {
		t.Errorf("the offered call was refused: %v", outs[2].Err)
	}
	if got := a.calls(); len(got) != 1 || !strings.HasPrefix(got[0], "lookup_customer ") {
		t.Errorf("functions ran: %v; want lookup_customer alone", got)
	}
	if got := drained(t, act); len(got) != 0 {
		t.Errorf("a tool not offered was staged: %v", got)
	}
}
