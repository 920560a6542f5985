package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/runner"
)

// scopedAgent is a pipeline whose tools declare scopes and budgets:
// read_orders (orders:read, 2 per activation), refund (orders:refund and
// orders:read, 1 per activation), and open (neither).
type scopedAgent struct {
	bound         *bindings.Bound
	reads, opens  atomic.Int64
	refundsRunned atomic.Int64
}

type readArgs struct {
	OrderID string `json:"order_id"`
}

func newScopedAgent(t testing.TB) *scopedAgent {
	t.Helper()
	str := toolreg.Param{Name: "order_id", Schema: toolreg.Schema{Type: toolreg.TypeString, MinLength: new(1)}}
	specs := []*toolreg.Spec{
		{Name: "read_orders", Description: "Read orders.", Params: []*toolreg.Param{&str},
			Scopes: []string{"orders:read"}, Budgets: &toolreg.Budgets{PerActivation: 2}},
		{Name: "refund", Description: "Refund.", SideEffect: true, Params: []*toolreg.Param{&str},
			Scopes: []string{"orders:refund", "orders:read"}, Budgets: &toolreg.Budgets{PerActivation: 1}},
		{Name: "open", Description: "Open to anyone.", Params: []*toolreg.Param{&str}},
		{Name: "whoami", Description: "Who calls."},
	}
	s := &scopedAgent{}
	b := bindings.New(specs)
	bindings.ReadOnly(b, "read_orders", func(ctx context.Context, a readArgs) (string, error) {
		s.reads.Add(1)
		p, _ := toolreg.PrincipalFrom(ctx)
		return "read by " + p.String(), nil
	})
	bindings.Effect(b, "refund", func(context.Context, readArgs) (bool, error) { s.refundsRunned.Add(1); return true, nil })
	bindings.ReadOnly(b, "open", func(context.Context, readArgs) (string, error) { s.opens.Add(1); return "ok", nil })
	bindings.ReadOnly(b, "whoami", func(ctx context.Context, _ struct{}) (string, error) {
		p, _ := toolreg.PrincipalFrom(ctx)
		return p.String(), nil
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	s.bound = bound
	return s
}

var (
	reader   = &toolreg.Principal{Subject: "ana", Scopes: []string{"orders:read"}}
	refunder = &toolreg.Principal{Subject: "bo", Scopes: []string{"orders:read", "orders:refund"}}
	args     = json.RawMessage(`{"order_id":"o-1"}`)
)

func scopeError(err error, missing ...string) bool {
	var e *toolreg.ScopeError
	return errors.As(err, &e) && strings.Join(e.Missing, ",") == strings.Join(missing, ",") && errors.Is(err, toolreg.ErrTool)
}

// A tool whose scopes the caller lacks is refused before anything runs or
// is looked at, with a message for the model naming the missing scope;
// the caller's principal comes from the context, else the activation's.
func TestTheRunnerRefusesAToolWhoseScopesThePrincipalLacks(t *testing.T) {
	t.Parallel()
	s := newScopedAgent(t)
	ctx := context.Background()
	read, _ := s.bound.Pipeline.Get("read_orders")

	r := runner.New()
	if _, err := r.Run(ctx, read, args); !scopeError(err, "orders:read") {
		t.Fatalf("Run without a principal = %v, want a *toolreg.ScopeError naming orders:read", err)
	}
	// Refused before the arguments are looked at.
	if _, err := r.Run(toolreg.WithPrincipal(ctx, &toolreg.Principal{Subject: "x"}), read, json.RawMessage(`not json`)); !scopeError(err, "orders:read") {
		t.Fatalf("Run with bad arguments and no scope = %v, want the scope refusal", err)
	}
	if got, err := r.Run(toolreg.WithPrincipal(ctx, reader), read, args); err != nil || got != "read by ana" {
		t.Fatalf("Run as a reader = %v, %v", got, err)
	}
	if n := s.reads.Load(); n != 1 {
		t.Fatalf("read_orders ran %d times, want once: the refused calls must not run", n)
	}

	a := runner.NewActivation(s.bound.Pipeline, []byte("t-1"), 1, runner.WithClock(actClock))
	_, err := a.RunTool(ctx, "read_orders", args)
	var se *toolreg.ScopeError
	if !errors.As(err, &se) || !strings.Contains(se.ModelMessage(), `"orders:read"`) {
		t.Fatalf("RunTool without a principal = %v, want a refusal naming the scope to the model", err)
	}
	if _, err := a.RunTool(ctx, "open", args); err != nil {
		t.Fatalf("a tool without scopes is refused to the anonymous caller: %v", err)
	}
	withP := runner.NewActivation(s.bound.Pipeline, []byte("t-1"), 2, runner.WithClock(actClock), runner.WithPrincipal(reader))
	if got, err := withP.RunTool(ctx, "read_orders", args); err != nil || got != "read by ana" {
		t.Fatalf("RunTool with the activation's principal = %v, %v", got, err)
	}
	// The context's principal takes the activation's place for its call.
	if _, err := withP.RunTool(toolreg.WithPrincipal(ctx, nil), "read_orders", args); !scopeError(err, "orders:read") {
		t.Fatalf("RunTool with the anonymous principal in ctx = %v, want a refusal", err)
	}
	outs := withP.RunAll(ctx, []runner.Call{{Tool: read, Args: args}})
	if outs[0].Err != nil || outs[0].Result != "read by ana" {
		t.Fatalf("RunAll with the activation's principal = %+v", outs[0])
	}
}

// Act stages only what the activation's principal may do, and records the
// principal in the intent, whose id stays the position's.
func TestActStagesWithThePrincipalAndRefusesWithoutItsScopes(t *testing.T) {
	t.Parallel()
	s := newScopedAgent(t)
	for _, p := range []*toolreg.Principal{nil, reader} {
		opts := []runner.ActivationOption{runner.WithClock(actClock)}
		if p != nil {
			opts = append(opts, runner.WithPrincipal(p))
		}
		a := runner.NewActivation(s.bound.Pipeline, []byte("t-1"), 1, opts...)
		_, err := a.Act("refund", args)
		if !scopeError(err, "orders:refund") && !scopeError(err, "orders:refund", "orders:read") {
			t.Fatalf("Act as %v = %v, want a *toolreg.ScopeError", p, err)
		}
		if a.Step() != 0 {
			t.Fatalf("a refused Act took step %d", a.Step())
		}
	}
	given := &toolreg.Principal{Subject: "bo", Scopes: []string{"orders:read", "orders:refund"}}
	a := runner.NewActivation(s.bound.Pipeline, []byte("t-1"), 1, runner.WithClock(actClock), runner.WithPrincipal(given),
		runner.WithSigningKey("k1", []byte("secret")))
	given.Scopes[0] = "changed after" // the activation copied it
	in, err := a.Act("refund", args)
	if err != nil {
		t.Fatal(err)
	}
	if in.Principal == nil || in.Principal.Subject != "bo" || strings.Join(in.Principal.Scopes, ",") != "orders:read,orders:refund" {
		t.Fatalf("staged principal %+v, want bo with orders:read and orders:refund", in.Principal)
	}
	if in.ID != intent.IntentID([]byte("t-1"), 1, 0) {
		t.Fatalf("intent id %s is not the position's", in.ID)
	}
	if err := in.VerifyHMAC(map[string][]byte{"k1": []byte("secret")}); err != nil {
		t.Fatalf("the signed intent does not verify: %v", err)
	}
	in.Principal.Scopes = append(in.Principal.Scopes, "admin") // the caller's copy
	staged, _ := a.Drain()
	if len(staged[0].Principal.Scopes) != 2 {
		t.Fatalf("changing Act's copy changed the staged intent: %+v", staged[0].Principal)
	}
	if s.refundsRunned.Load() != 0 {
		t.Fatal("Act ran the effect")
	}
}

// A per-activation budget counts the calls that ran: a call over it is
// refused with a message naming the budget, calls refused for their
// arguments do not count, and the next activation starts afresh.
func TestAPerActivationBudgetRefusesTheCallOverIt(t *testing.T) {
	t.Parallel()
	s := newScopedAgent(t)
	ctx := context.Background()
	a := runner.NewActivation(s.bound.Pipeline, []byte("t-1"), 1, runner.WithClock(actClock), runner.WithPrincipal(refunder))
	if _, err := a.RunTool(ctx, "read_orders", json.RawMessage(`{"order_id":""}`)); err == nil {
		t.Fatal("an empty order_id ran")
	}
	for i := range 2 {
		if _, err := a.RunTool(ctx, "read_orders", args); err != nil {
			t.Fatalf("call %d within the budget: %v", i+1, err)
		}
	}
	_, err := a.RunTool(ctx, "read_orders", args)
	var be *toolreg.BudgetError
	if !errors.As(err, &be) || be.Budget != toolreg.BudgetPerActivation || be.Limit != 2 {
		t.Fatalf("the third call = %v, want a *toolreg.BudgetError of per_activation 2", err)
	}
	if m := be.ModelMessage(); !strings.Contains(m, "per_activation") || !strings.Contains(m, "next activation") {
		t.Fatalf("model message %q does not say which budget and when it frees", m)
	}
	read, _ := s.bound.Pipeline.Get("read_orders")
	if outs := a.RunAll(ctx, []runner.Call{{Tool: read, Args: args}}); !errors.As(outs[0].Err, &be) {
		t.Fatalf("RunAll over the budget = %+v", outs[0])
	}
	if n := s.reads.Load(); n != 2 {
		t.Fatalf("read_orders ran %d times, want 2", n)
	}
	// Act: one refund per activation; a refused argument does not count.
	if _, err := a.Act("refund", json.RawMessage(`{"order_id":""}`)); err == nil {
		t.Fatal("a bad refund was staged")
	}
	if _, err := a.Act("refund", args); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Act("refund", args); !errors.As(err, &be) || be.Tool != "refund" || a.Step() != 1 {
		t.Fatalf("the second refund = %v (step %d), want a per_activation refusal staging nothing", err, a.Step())
	}
	next := runner.NewActivation(s.bound.Pipeline, []byte("t-1"), 2, runner.WithClock(actClock), runner.WithPrincipal(refunder))
	if _, err := next.RunTool(ctx, "read_orders", args); err != nil {
		t.Fatalf("the next activation: %v", err)
	}
}

// Sixteen goroutines calling one budgeted tool at once never run it more
// often than the budget allows, through RunTool and RunAll alike.
func TestAPerActivationBudgetHoldsUnderConcurrentCalls(t *testing.T) {
	t.Parallel()
	s := newScopedAgent(t)
	ctx := context.Background()
	a := runner.NewActivation(s.bound.Pipeline, []byte("t-1"), 1, runner.WithPrincipal(reader))
	read, _ := s.bound.Pipeline.Get("read_orders")
	var wg sync.WaitGroup
	var ok, refused atomic.Int64
	for i := range 16 {
		wg.Go(func() {
			var err error
			if i%2 == 0 {
				_, err = a.RunTool(ctx, "read_orders", args)
			} else {
				err = a.RunAll(ctx, []runner.Call{{Tool: read, Args: args}})[0].Err
			}
			var be *toolreg.BudgetError
			switch {
			case err == nil:
				ok.Add(1)
			case errors.As(err, &be):
				refused.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 2 || refused.Load() != 14 || s.reads.Load() != 2 {
		t.Fatalf("%d ran, %d refused, the function ran %d times; want 2, 14, 2", ok.Load(), refused.Load(), s.reads.Load())
	}
}

// otherKey is a context key of a value the tests do not read.
type otherKey struct{}

// uncomparableCtx is a context of a type == panics on.
type uncomparableCtx struct {
	context.Context
	tags []string
}

// The activation keeps the context it derived last, to give a turn's calls
// one: a context of a type that cannot be compared, and a new context
// between two calls, still get the activation's principal, and nothing
// panics.
func TestTheActivationsPrincipalReachesEveryContext(t *testing.T) {
	t.Parallel()
	s := newScopedAgent(t)
	a := runner.NewActivation(s.bound.Pipeline, []byte("t-1"), 1, runner.WithPrincipal(reader))
	base := context.Background()
	for i, ctx := range []context.Context{
		uncomparableCtx{base, []string{"a"}}, uncomparableCtx{base, []string{"b"}},
		base, base, context.WithValue(base, otherKey{}, 1), base,
	} {
		if got, err := a.RunTool(ctx, "whoami", nil); err != nil || got != "ana" {
			t.Fatalf("call %d: %v, %v; want the activation's principal", i, got, err)
		}
	}
	if got, _ := a.RunTool(toolreg.WithPrincipal(base, &toolreg.Principal{Subject: "bo"}), "whoami", nil); got != "bo" {
		t.Fatalf("a context with a principal of its own ran as %v", got)
	}
	if _, err := a.RunTool(toolreg.WithPrincipal(base, nil), "open", args); err != nil {
		t.Fatal(err)
	}
}
