package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/runner"
)

type lineItem struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

type orderArgs struct {
	Customer string     `json:"customer"`
	Items    []lineItem `json:"items"`
}

// duplicateKeyCalls are arguments that name a key twice, at each depth, and
// the path each error must name.
var duplicateKeyCalls = []struct {
	name, args, path string
}{
	{"at the top", `{"customer":"c-1","customer":"c-2","items":[]}`, `"customer"`},
	{"in an object in an array", `{"customer":"c-1","items":[{"sku":"a","qty":1},{"sku":"b","qty":1,"qty":100}]}`, `"items/1/qty"`},
	{"spelled with an escape", `{"customer":"c-1","\u0063ustomer":"c-2","items":[]}`, `"customer"`},
}

func orderTools(t *testing.T) *bindings.Bound {
	t.Helper()
	item := &toolreg.Schema{Type: toolreg.TypeObject, Properties: []*toolreg.Param{
		{Name: "sku", Schema: toolreg.Schema{Type: toolreg.TypeString}},
		{Name: "qty", Schema: toolreg.Schema{Type: toolreg.TypeInteger}},
	}}
	params := func() []*toolreg.Param {
		return []*toolreg.Param{
			{Name: "customer", Schema: toolreg.Schema{Type: toolreg.TypeString}},
			{Name: "items", Schema: toolreg.Schema{Type: toolreg.TypeArray, Items: item}},
		}
	}
	b := bindings.New([]*toolreg.Spec{
		{Name: "quote_order", Description: "Quote an order.", Params: params()},
		{Name: "place_order", Description: "Place an order.", SideEffect: true, Params: params()},
	})
	bindings.ReadOnly(b, "quote_order", func(_ context.Context, a orderArgs) (orderArgs, error) { return a, nil })
	bindings.Effect(b, "place_order", func(_ context.Context, a orderArgs) (bool, error) { return true, nil })
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	return bound
}

func wantDuplicateKeyError(t *testing.T, err error, path string) {
	t.Helper()
	var ae *toolreg.ToolArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v, want a *toolreg.ToolArgumentError", err)
	}
	msg := ae.ModelMessage()
	if !strings.Contains(msg, path) || !strings.Contains(msg, "each key once") || !strings.Contains(msg, "send it once") {
		t.Fatalf("model message %q does not name %s, nor say to send each key once", msg, path)
	}
}

func TestArgumentsThatRepeatAKeyAreRefusedOnEveryPath(t *testing.T) {
	t.Parallel()
	bound := orderTools(t)
	for _, tc := range duplicateKeyCalls {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			quote, err := bound.Pipeline.Get("quote_order")
			if err != nil {
				t.Fatal(err)
			}
			_, err = runner.New().Run(context.Background(), quote, json.RawMessage(tc.args))
			wantDuplicateKeyError(t, err, tc.path)

			place, err := bound.Pipeline.Get("place_order")
			if err != nil {
				t.Fatal(err)
			}
			_, err = place.CheckArgs(json.RawMessage(tc.args))
			wantDuplicateKeyError(t, err, tc.path)

			a := runner.NewActivation(bound.Pipeline, []byte("e"), 1, runner.WithClock(actClock))
			in, err := a.Act("place_order", json.RawMessage(tc.args))
			wantDuplicateKeyError(t, err, tc.path)
			if in != nil || a.Step() != 0 {
				t.Fatalf("Act staged %+v", in)
			}

			eff, err := bound.Effector.Get("place_order")
			if err != nil {
				t.Fatal(err)
			}
			_, err = eff.DecodeArgs(json.RawMessage(tc.args))
			wantDuplicateKeyError(t, err, tc.path)
		})
	}
	// The same arguments with each key once pass everywhere.
	quote, _ := bound.Pipeline.Get("quote_order")
	if _, err := runner.New().Run(context.Background(), quote, json.RawMessage(`{"customer":"c-1","items":[{"sku":"b","qty":1}]}`)); err != nil {
		t.Fatalf("Run with each key once: %v", err)
	}
}
