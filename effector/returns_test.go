package effector_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/loader"
)

const refundWithReturns = `name: issue_refund
description: Refund an order.
side_effect: true
params:
  order_id: {type: string}
  amount: {type: integer}
returns:
  type: object
  properties:
    refund_id: {type: string, pattern: "^re_[0-9]+$"}
    amount: {type: integer, minimum: 1}
    note: {type: string, required: false}
`

// refundEffector binds fn to issue_refund and returns an effector over a
// memory store, and the count of the function's calls.
func refundEffector(t *testing.T, fn func(context.Context, refundArgs) (refundReceipt, error), opts ...effector.Option) (*effector.Effector, *atomic.Int32) {
	t.Helper()
	specs, err := loader.LoadFS(fstest.MapFS{"refund.yaml": {Data: []byte(refundWithReturns)}}, "refund.yaml")
	if err != nil {
		t.Fatal(err)
	}
	calls := new(atomic.Int32)
	b := bindings.New(specs)
	bindings.Effect(b, "issue_refund", func(ctx context.Context, a refundArgs) (refundReceipt, error) {
		calls.Add(1)
		return fn(ctx, a)
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]effector.Option{effector.WithClock(fixedClock), effector.WithLogger(quietLogger())}, opts...)
	e, err := effector.New(bound.Effector, effector.NewMemoryStore(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e, calls
}

// TestAnOffContractEffectIsRecordedAsErrorWithItsPaths: the function ran
// (its effect happened), but its result breaks returns, so the recorded
// result is a terminal ERROR that says so and names each failing path; a
// redelivery republishes it without running the function again.
func TestAnOffContractEffectIsRecordedAsErrorWithItsPaths(t *testing.T) {
	t.Parallel()
	e, calls := refundEffector(t, func(_ context.Context, a refundArgs) (refundReceipt, error) {
		return refundReceipt{RefundID: "refund-9", Amount: 0, Note: "x"}, nil
	})
	in := intentFor("issue_refund", `{"order_id":"o1","amount":5}`, 0)
	res, err := e.Process(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != intent.StatusError || len(res.Payload) != 0 {
		t.Fatalf("result = %s %q, want ERROR with no payload", res.Status, res.Payload)
	}
	for _, part := range []string{
		`tool "issue_refund" ran, so its effect happened, but its result breaks the manifest's returns`,
		`/refund_id: want a string matching "^re_[0-9]+$", got "refund-9"`,
		`/amount: want at least 1, got 0`,
	} {
		if !strings.Contains(res.ErrorMessage, part) {
			t.Errorf("ErrorMessage %q does not say %q", res.ErrorMessage, part)
		}
	}
	again, err := e.Process(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status != intent.StatusError || again.ErrorMessage != res.ErrorMessage || calls.Load() != 1 {
		t.Errorf("redelivery: %s %q after %d calls, want the same ERROR and 1 call", again.Status, again.ErrorMessage, calls.Load())
	}
}

// TestAResultThatKeepsTheContractIsPublished: the same tool returning what
// returns allows gives OK with its canonical JSON; WithoutResultValidation
// publishes even an off-contract result.
func TestAResultThatKeepsTheContractIsPublished(t *testing.T) {
	t.Parallel()
	e, _ := refundEffector(t, func(_ context.Context, a refundArgs) (refundReceipt, error) {
		return refundReceipt{RefundID: "re_1", Amount: a.Amount}, nil
	})
	res, err := e.Process(context.Background(), intentFor("issue_refund", `{"order_id":"o1","amount":5}`, 0))
	if err != nil || res.Status != intent.StatusOK || string(res.Payload) != `{"amount":5,"note":"","refund_id":"re_1"}` {
		t.Errorf("Process = %s %s %v, want OK with the receipt", res.Status, res.Payload, err)
	}
	e, _ = refundEffector(t, func(_ context.Context, a refundArgs) (refundReceipt, error) {
		return refundReceipt{RefundID: "bad"}, nil
	}, effector.WithoutResultValidation())
	res, err = e.Process(context.Background(), intentFor("issue_refund", `{"order_id":"o1","amount":5}`, 0))
	if err != nil || res.Status != intent.StatusOK {
		t.Errorf("WithoutResultValidation: Process = %s %v, want OK", res.Status, err)
	}
}

// TestToolRunnerRefusesAnOffContractResult: the EffectorToolRunner returns
// a *toolreg.ToolResultError, never the value.
func TestToolRunnerRefusesAnOffContractResult(t *testing.T) {
	t.Parallel()
	specs, err := loader.LoadFS(fstest.MapFS{"refund.yaml": {Data: []byte(refundWithReturns)}}, "refund.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := bindings.New(specs)
	bindings.Effect(b, "issue_refund", func(context.Context, refundArgs) (refundReceipt, error) {
		return refundReceipt{RefundID: "nope", Amount: 1}, nil
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := bound.Effector.Get("issue_refund")
	res, err := effector.NewToolRunner().Run(context.Background(), tool, json.RawMessage(`{"order_id":"o1","amount":5}`))
	var re *toolreg.ToolResultError
	if !errors.As(err, &re) || res != nil || re.Problems[0].Path != "/refund_id" {
		t.Errorf("Run = %v, %v; want a *toolreg.ToolResultError at /refund_id and no result", res, err)
	}
}
