package effector_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/internal/toolbind"
)

func refundSpec() *toolreg.Spec {
	return &toolreg.Spec{
		Name: "refund", Description: "Refund an order.", SideEffect: true, Pos: toolreg.Pos{File: "refund.yaml", Line: 1},
		Params: []*toolreg.Param{
			{Name: "order_id", Schema: toolreg.Schema{Type: toolreg.TypeString}},
			{Name: "cents", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Minimum: "1"}},
		},
	}
}

func lookupSpec() *toolreg.Spec {
	return &toolreg.Spec{
		Name: "lookup", Description: "Look up an order.", Pos: toolreg.Pos{File: "lookup.yaml", Line: 1},
		Params: []*toolreg.Param{{Name: "order_id", Schema: toolreg.Schema{Type: toolreg.TypeString}}},
	}
}

type RefundArgs struct {
	OrderID string `json:"order_id"`
	Cents   int    `json:"cents"`
}

type LookupArgs struct {
	OrderID string `json:"order_id"`
}

type counters struct{ refunds, lookups atomic.Int64 }

// bind binds refund to fn and lookup to a counting function and returns the
// bound tables.
func bind(t *testing.T, fn func(context.Context, RefundArgs) (string, error)) (*bindings.Bound, *counters) {
	t.Helper()
	var c counters
	b := bindings.New([]*toolreg.Spec{refundSpec(), lookupSpec()})
	bindings.Effect(b, "refund", func(ctx context.Context, a RefundArgs) (string, error) {
		c.refunds.Add(1)
		return fn(ctx, a)
	})
	bindings.ReadOnly(b, "lookup", func(context.Context, LookupArgs) (string, error) {
		c.lookups.Add(1)
		return "found", nil
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	return bound, &c
}

func refunded(_ context.Context, a RefundArgs) (string, error) {
	return a.OrderID + " refunded " + strings.Repeat("¢", a.Cents), nil
}

func TestToolRunnerRunsASideEffectingTool(t *testing.T) {
	t.Parallel()
	bound, c := bind(t, refunded)
	refund, _ := bound.Effector.Get("refund")
	res, err := effector.NewToolRunner().Run(context.Background(), refund, json.RawMessage(`{"order_id":"o-1","cents":"3"}`))
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if res != "o-1 refunded ¢¢¢" {
		t.Errorf("Run() = %q, want the function's result with the coerced cents", res)
	}
	if n := c.refunds.Load(); n != 1 {
		t.Errorf("refund ran %d times, want once", n)
	}
}

func TestToolRunnerRefusesAReadOnlyTool(t *testing.T) {
	t.Parallel()
	bound, c := bind(t, refunded)
	lookup, _ := bound.Pipeline.Get("lookup")
	for _, args := range []string{`{"order_id":"o-1"}`, `{`, ``} {
		_, err := effector.NewToolRunner().Run(context.Background(), lookup, json.RawMessage(args))
		var re *toolreg.ReadOnlyToolError
		if !errors.As(err, &re) || re.Name != "lookup" {
			t.Errorf("Run(%q) error = %v, want a *toolreg.ReadOnlyToolError naming lookup", args, err)
		}
	}
	if n := c.lookups.Load(); n != 0 {
		t.Errorf("lookup ran %d times, want never", n)
	}
}

func TestToolRunnerRefusesBadArgumentsWithoutInvoking(t *testing.T) {
	t.Parallel()
	bound, c := bind(t, refunded)
	refund, _ := bound.Effector.Get("refund")
	_, err := effector.NewToolRunner().Run(context.Background(), refund, json.RawMessage(`{"order_id":7,"cents":0,"memo":"x"}`))
	var ae *toolreg.ToolArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("Run() error = %v, want a *toolreg.ToolArgumentError", err)
	}
	var paths []string
	for _, p := range ae.Problems {
		paths = append(paths, p.Path)
	}
	if got := strings.Join(paths, " "); got != "/cents /memo /order_id" {
		t.Errorf("failing paths = %q, want /cents /memo /order_id", got)
	}
	if n := c.refunds.Load(); n != 0 {
		t.Errorf("refund ran %d times, want never", n)
	}
}

func TestToolRunnerDoesNotInvokeWithADoneContext(t *testing.T) {
	t.Parallel()
	bound, c := bind(t, refunded)
	refund, _ := bound.Effector.Get("refund")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := effector.NewToolRunner().Run(ctx, refund, json.RawMessage(`{"order_id":"o-1","cents":1}`))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run() error = %v, want context.Canceled", err)
	}
	if n := c.refunds.Load(); n != 0 {
		t.Errorf("refund ran %d times, want never", n)
	}
}

func TestToolRunnerRecoversAPanic(t *testing.T) {
	t.Parallel()
	bound, _ := bind(t, func(context.Context, RefundArgs) (string, error) { panic("payment gateway exploded") })
	refund, _ := bound.Effector.Get("refund")
	_, err := effector.NewToolRunner().Run(context.Background(), refund, json.RawMessage(`{"order_id":"o-1","cents":1}`))
	var pe *toolreg.ToolPanicError
	if !errors.As(err, &pe) || pe.Tool != "refund" || !strings.Contains(err.Error(), "payment gateway exploded") {
		t.Errorf("Run() error = %v, want a *toolreg.ToolPanicError naming refund and the panic", err)
	}
}

func TestToolRunnerReturnsTheFunctionsError(t *testing.T) {
	t.Parallel()
	errDeclined := errors.New("card declined")
	bound, _ := bind(t, func(context.Context, RefundArgs) (string, error) { return "partial", errDeclined })
	refund, _ := bound.Effector.Get("refund")
	res, err := effector.NewToolRunner().Run(context.Background(), refund, json.RawMessage(`{"order_id":"o-1","cents":1}`))
	if !errors.Is(err, errDeclined) || res != nil {
		t.Errorf("Run() = %v, %v; want nil, the function's error", res, err)
	}
}

func TestToolRunnerFindsNoFunctionInThePipelinesTable(t *testing.T) {
	t.Parallel()
	bound, c := bind(t, refunded)
	// The pipeline holds refund's contract only: even the effector's runner
	// cannot reach a function through it.
	refund, _ := bound.Pipeline.Get("refund")
	_, err := effector.NewToolRunner().Run(context.Background(), refund, json.RawMessage(`{"order_id":"o-1","cents":1}`))
	if !errors.Is(err, toolreg.ErrNotBound) {
		t.Errorf("Run() error = %v, want toolreg.ErrNotBound", err)
	}
	if n := c.refunds.Load(); n != 0 {
		t.Errorf("refund ran %d times, want never", n)
	}
}

func TestToolRunnerRefusesAHandMadeBindingOfTheWrongShape(t *testing.T) {
	t.Parallel()
	var calls int
	tool := toolbind.Attach(refundSpec(), &toolbind.Binding{
		Func:   func(a RefundArgs) string { calls++; return "" },
		Decode: func(json.RawMessage) (any, error) { return RefundArgs{}, nil },
	}).(*toolreg.Tool)
	_, err := effector.NewToolRunner().Run(context.Background(), tool, json.RawMessage(`{}`))
	if err == nil || !strings.Contains(err.Error(), "bind it with bindings.Effect") {
		t.Errorf("Run() error = %v, want one saying how to bind the function", err)
	}
	if calls != 0 {
		t.Errorf("the function ran %d times, want never", calls)
	}
	if _, err := effector.NewToolRunner().Run(context.Background(), nil, nil); err == nil {
		t.Errorf("Run(nil tool) = nil error")
	}
}

func ExampleToolRunner_Run() {
	b := bindings.New([]*toolreg.Spec{refundSpec(), lookupSpec()})
	bindings.Effect(b, "refund", func(_ context.Context, a RefundArgs) (string, error) {
		return fmt.Sprintf("refunded %d cents on %s", a.Cents, a.OrderID), nil
	})
	bindings.ReadOnly(b, "lookup", func(context.Context, LookupArgs) (string, error) { return "found", nil })
	bound, err := b.Bind()
	if err != nil {
		panic(err)
	}
	r := effector.NewToolRunner()
	ctx := context.Background()

	refund, _ := bound.Effector.Get("refund")
	fmt.Println(r.Run(ctx, refund, json.RawMessage(`{"order_id":"o-1","cents":250}`)))

	lookup, _ := bound.Pipeline.Get("lookup")
	fmt.Println(r.Run(ctx, lookup, json.RawMessage(`{"order_id":"o-1"}`)))
	// Output:
	// refunded 250 cents on o-1 <nil>
	// <nil> toolreg: tool "lookup" is read-only: the effector runs only side-effecting tools; run it inline with the runner
}
