package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/provider/dispatch"
)

// FuzzDispatch feeds model responses of up to three calls, with any names,
// ids and argument text: every call is answered, in order, with a non-empty
// message; no effect function runs; a response is refused whole only for its
// ids; each distinct effect is staged once.
func FuzzDispatch(f *testing.F) {
	f.Add("c1", "lookup_customer", `{"customer_id":"cus_ada"}`, "c2", "refund_order", `{"order_id":"ord_1","amount":5}`, "c3", "refund_order", `{"amount":5,"order_id":"ord_1"}`)
	f.Add("c1", "search_orders", `{"customer_id":"cus_ada","limit":null}`, "c1", "send_email", `{"to":"a","subject":"b"}`, "c3", "nope", `{`)
	f.Add("", "explode", `{}`, "c2", "refund_order", `"x"`, "c3", "send_email", `{"to":1}`)
	a := newAgent(f)
	f.Fuzz(func(t *testing.T, id1, name1, args1, id2, name2, args2, id3, name3, args3 string) {
		calls := []dispatch.Call{
			{ID: id1, Name: name1, Args: json.RawMessage(args1)},
			{ID: id2, Name: name2, Args: json.RawMessage(args2)},
			{ID: id3, Name: name3, Args: json.RawMessage(args3)},
		}
		act := a.activation()
		outs, err := dispatch.Dispatch(context.Background(), act, calls)
		if err != nil {
			var re *dispatch.ResponseError
			if !errors.As(err, &re) {
				t.Fatalf("Dispatch = %v; only a *ResponseError may refuse a response", err)
			}
			ids := map[string]bool{}
			bad := false
			for _, c := range calls {
				bad = bad || c.ID == "" || ids[c.ID]
				ids[c.ID] = true
			}
			if !bad {
				t.Fatalf("Dispatch refused distinct, non-empty ids: %v", err)
			}
			if act.Step() != 0 {
				t.Fatalf("a refused response staged %d intents", act.Step())
			}
			return
		}
		if len(outs) != len(calls) {
			t.Fatalf("%d outcomes for %d calls", len(outs), len(calls))
		}
		staged := map[string]bool{}
		for i, o := range outs {
			if o.Call.ID != calls[i].ID || strings.TrimSpace(o.Text) == "" {
				t.Fatalf("outcome %d answers %q with %q", i, o.Call.ID, o.Text)
			}
			if o.IsError != (o.Status == dispatch.Refused || o.Status == dispatch.Failed) {
				t.Fatalf("outcome %d: status %s, IsError %v", i, o.Status, o.IsError)
			}
			if o.Status == dispatch.Staged {
				key := o.Intent.ToolName + " " + string(o.Intent.ArgsJSON)
				if staged[key] {
					t.Fatalf("%s staged twice", key)
				}
				staged[key] = true
			}
		}
		if int(act.Step()) != len(staged) {
			t.Fatalf("step %d after %d staged effects", act.Step(), len(staged))
		}
		if got := a.ranEffects(); len(got) != 0 {
			t.Fatalf("effect functions ran: %v", got)
		}
	})
}
