package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/runner"
)

// A turn that offered the model some tools refuses a call of any other, read-
// only or side-effecting, registered or not, before anything runs or is staged.
func TestACallOutsideTheOfferedSetIsRefusedNeverRun(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	a := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, runner.WithClock(actClock),
		runner.WithOffered("refund_check"))
	ctx := context.Background()

	if _, err := a.RunTool(ctx, "lookup_order", json.RawMessage(`{"order_id":"o-1"}`)); !isNotOffered(err, "lookup_order") {
		t.Errorf("RunTool(lookup_order) = %v, want *toolreg.ToolNotOfferedError", err)
	}
	if n := s.lookups.Load(); n != 0 {
		t.Errorf("lookup_order ran %d times though it was not offered", n)
	}
	// Refused before its arguments are looked at: bad arguments give the same refusal.
	if _, err := a.RunTool(ctx, "lookup_order", json.RawMessage(`not json`)); !isNotOffered(err, "lookup_order") {
		t.Errorf("RunTool(lookup_order, bad args) = %v, want *toolreg.ToolNotOfferedError", err)
	}
	if _, err := a.Act("issue_refund", json.RawMessage(`{"order_id":"o-1","amount":5}`)); !isNotOffered(err, "issue_refund") {
		t.Errorf("Act(issue_refund) = %v, want *toolreg.ToolNotOfferedError", err)
	}
	if a.Step() != 0 {
		t.Errorf("step = %d after a refused Act, want 0", a.Step())
	}
	// A name the registry does not hold is refused the same way, naming no
	// registered tool the model was not shown.
	_, err := a.RunTool(ctx, "lookup_ordr", nil)
	if !isNotOffered(err, "lookup_ordr") || strings.Contains(err.Error(), "lookup_order") {
		t.Errorf("RunTool(lookup_ordr) = %v, want a refusal that does not mention lookup_order", err)
	}
	// The offered tool runs.
	if _, err := a.RunTool(ctx, "refund_check", json.RawMessage(`{"order_id":"o-1","amount":5}`)); err != nil {
		t.Errorf("RunTool(refund_check) = %v, want it to run", err)
	}
	intents, err := a.Drain()
	if err != nil || len(intents) != 0 {
		t.Errorf("Drain = %v, %v; want nothing staged", intents, err)
	}
	if n := s.refunds.Load(); n != 0 {
		t.Errorf("issue_refund ran %d times", n)
	}
}

func isNotOffered(err error, name string) bool {
	var e *toolreg.ToolNotOfferedError
	return errors.As(err, &e) && e.Name == name && errors.Is(err, toolreg.ErrTool)
}

func TestTheRefusalTellsTheModelWhatToDo(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	ctx := context.Background()
	plain := runner.NewActivation(s.bound.Pipeline, nil, 1, runner.WithOffered("refund_check"))
	_, err := plain.RunTool(ctx, "lookup_order", nil)
	var e *toolreg.ToolNotOfferedError
	if !errors.As(err, &e) {
		t.Fatalf("RunTool = %v", err)
	}
	if got, want := e.ModelMessage(), `Tool "lookup_order" is not available in this turn. Call one of the tools you were given.`; got != want {
		t.Errorf("ModelMessage = %q, want %q", got, want)
	}
	if !strings.HasPrefix(err.Error(), "toolreg: ") {
		t.Errorf("Error() = %q, want the toolreg: prefix", err)
	}

	// With search_tools offered, the message points the model at it.
	withSearch := runner.NewActivation(s.bound.Pipeline, nil, 1, runner.WithOffered("refund_check", runner.SearchToolName))
	_, err = withSearch.RunTool(ctx, "lookup_order", nil)
	if !errors.As(err, &e) || e.Search != "search_tools" || !strings.Contains(e.ModelMessage(), "call search_tools to find a tool") {
		t.Errorf("refusal with search_tools offered = %v (model message %q)", err, e.ModelMessage())
	}
}

func TestOfferGrowsTheSetForTheRestOfTheTurn(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	ctx := context.Background()
	a := runner.NewActivation(s.bound.Pipeline, []byte("k"), 1, runner.WithClock(actClock), runner.WithOffered())
	if _, err := a.RunTool(ctx, "lookup_order", json.RawMessage(`{"order_id":"o-1"}`)); !isNotOffered(err, "lookup_order") {
		t.Fatalf("WithOffered() offered lookup_order: %v", err)
	}
	if err := a.Offer("lookup_order", "issue_refund"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.RunTool(ctx, "lookup_order", json.RawMessage(`{"order_id":"o-1"}`)); err != nil {
		t.Errorf("RunTool after Offer = %v", err)
	}
	if _, err := a.Act("issue_refund", json.RawMessage(`{"order_id":"o-1","amount":5}`)); err != nil {
		t.Errorf("Act after Offer = %v", err)
	}
	got, limited := a.Offered()
	if !limited || !slices.Equal(got, []string{"issue_refund", "lookup_order"}) {
		t.Errorf("Offered = %v, %v", got, limited)
	}

	// An unknown name is refused and adds nothing, not even the known ones beside it.
	var nf *toolreg.ToolNotFoundError
	if err := a.Offer("refund_check", "no_such_tool"); !errors.As(err, &nf) || nf.Name != "no_such_tool" {
		t.Errorf("Offer(no_such_tool) = %v, want *toolreg.ToolNotFoundError", err)
	}
	if got, _ := a.Offered(); slices.Contains(got, "refund_check") {
		t.Errorf("a failed Offer added refund_check: %v", got)
	}
}

func TestAnActivationWithoutWithOfferedOffersEveryTool(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	a := runner.NewActivation(s.bound.Pipeline, nil, 1)
	if _, err := a.RunTool(context.Background(), "lookup_order", json.RawMessage(`{"order_id":"o-1"}`)); err != nil {
		t.Errorf("RunTool = %v", err)
	}
	if err := a.Offer("lookup_order"); err != nil {
		t.Errorf("Offer on an unlimited activation = %v", err)
	}
	if got, limited := a.Offered(); limited || got != nil {
		t.Errorf("Offered = %v, %v; want nil, false", got, limited)
	}
}

// Offer and calls race freely (go test -race); a call sees the set before or
// after an Offer, never a torn one.
func TestOfferIsSafeDuringCalls(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	a := runner.NewActivation(s.bound.Pipeline, nil, 1, runner.WithOffered("refund_check"))
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 100 {
			_ = a.Offer("lookup_order")
		}
	})
	for range 4 {
		wg.Go(func() {
			for range 100 {
				_, err := a.RunTool(context.Background(), "lookup_order", json.RawMessage(`{"order_id":"o-1"}`))
				if err != nil && !isNotOffered(err, "lookup_order") {
					t.Errorf("RunTool = %v", err)
				}
			}
		})
	}
	wg.Wait()
}

// Tool and RunAll, the doors a dispatcher uses, refuse a tool outside the
// offered set as RunTool does, and RunAll runs the offered calls beside it.
func TestToolAndRunAllRefuseAToolOutsideTheOfferedSet(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	a := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, runner.WithClock(actClock),
		runner.WithOffered("refund_check"))
	if _, err := a.Tool("lookup_order"); !isNotOffered(err, "lookup_order") {
		t.Errorf("Tool(lookup_order) = %v, want *toolreg.ToolNotOfferedError", err)
	}
	lookup, err := s.bound.Pipeline.Get("lookup_order")
	if err != nil {
		t.Fatal(err)
	}
	check, err := a.Tool("refund_check")
	if err != nil {
		t.Fatal(err)
	}
	outs := a.RunAll(context.Background(), []runner.Call{
		{Tool: lookup, Args: json.RawMessage(`{"order_id":"o-1"}`)},
		{Tool: check, Args: json.RawMessage(`{"order_id":"o-1","amount":5}`)},
	})
	if !isNotOffered(outs[0].Err, "lookup_order") {
		t.Errorf("RunAll's lookup_order outcome = %v, want *toolreg.ToolNotOfferedError", outs[0].Err)
	}
	if outs[1].Err != nil {
		t.Errorf("RunAll's refund_check outcome = %v, want it to run", outs[1].Err)
	}
	if n := s.lookups.Load(); n != 0 {
		t.Errorf("lookup_order ran %d times though it was not offered", n)
	}
}
