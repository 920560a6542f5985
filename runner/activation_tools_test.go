package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/runner"
)

func TestActivationToolResolvesThePipelinesTool(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	a := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, runner.WithClock(actClock))
	tool, err := a.Tool("issue_refund")
	if err != nil || tool.Name() != "issue_refund" || !tool.SideEffect() {
		t.Fatalf("Tool(issue_refund) = %v, %v; want the side-effecting contract", tool, err)
	}
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"order_id":"o-1","amount":5}`)); !errors.As(err, new(*toolreg.SideEffectToolError)) {
		t.Errorf("the pipeline's issue_refund called directly gave %v; want *SideEffectToolError", err)
	}
	var nf *toolreg.ToolNotFoundError
	if _, err := a.Tool("nope"); !errors.As(err, &nf) {
		t.Errorf("Tool(nope) = %v; want *ToolNotFoundError", err)
	}
	if s.refunds.Load() != 0 || a.Step() != 0 {
		t.Errorf("looking tools up ran %d refunds and moved the step to %d", s.refunds.Load(), a.Step())
	}
}

// RunAll goes through the activation's own Runner, so its concurrency limit
// holds: two of four slow calls at once, never more.
func TestActivationRunAllKeepsItsRunnersLimit(t *testing.T) {
	t.Parallel()
	spec := &toolreg.Spec{Name: "slow", Description: "Wait a little.", Pos: toolreg.Pos{File: "slow.yaml", Line: 1},
		Params: []*toolreg.Param{orderIDParam()}}
	var running, peak atomic.Int64
	var mu sync.Mutex
	b := bindings.New([]*toolreg.Spec{spec, issueRefundSpec()})
	bindings.ReadOnly(b, "slow", func(_ context.Context, a OrderArgs) (string, error) {
		n := running.Add(1)
		mu.Lock()
		peak.Store(max(peak.Load(), n))
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		running.Add(-1)
		return a.OrderID, nil
	})
	bindings.Effect(b, "issue_refund", func(context.Context, RefundRequest) (bool, error) {
		t.Error("the effect ran inside RunAll")
		return true, nil
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	a := runner.NewActivation(bound.Pipeline, []byte("k"), 1, runner.WithClock(actClock),
		runner.WithRunner(runner.New(runner.WithMaxConcurrency(2))))
	slow, _ := a.Tool("slow")
	refund, _ := a.Tool("issue_refund")
	calls := []runner.Call{
		{Tool: slow, Args: json.RawMessage(`{"order_id":"a"}`)},
		{Tool: refund, Args: json.RawMessage(`{"order_id":"a","amount":5}`)},
		{Tool: slow, Args: json.RawMessage(`{"order_id":"b"}`)},
		{Tool: slow, Args: json.RawMessage(`{"order_id":"c"}`)},
		{Tool: slow, Args: json.RawMessage(`{"order_id":"d"}`)},
	}
	out := a.RunAll(context.Background(), calls)
	want := []string{"a", "", "b", "c", "d"}
	for i, o := range out {
		if i == 1 {
			if !errors.As(o.Err, new(*toolreg.SideEffectToolError)) {
				t.Errorf("outcome 1 = %v, %v; want *SideEffectToolError", o.Result, o.Err)
			}
			continue
		}
		if o.Err != nil || o.Result != want[i] {
			t.Errorf("outcome %d = %v, %v; want %q", i, o.Result, o.Err, want[i])
		}
	}
	if p := peak.Load(); p != 2 {
		t.Errorf("at most %d calls ran at once; want the runner's limit, 2", p)
	}
	if a.Step() != 0 {
		t.Errorf("RunAll moved the step to %d", a.Step())
	}
}
