package effector_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/runner"
)

type chargeArgs struct {
	Amount int `json:"amount"`
}

// budgetRig is an effector of charge (scope payments:charge, 2 per
// activation, 3 per entity in an hour) and ask (approval: required, 1 per
// entity in an hour), on a memory store, both on one fake clock.
type budgetRig struct {
	bound   *bindings.Bound
	store   *effector.MemoryStore
	e       *effector.Effector
	charges atomic.Int64
	now     atomic.Int64 // unix ms
	reader  *sdkmetric.ManualReader
	key     []byte
}

var payer = &toolreg.Principal{Subject: "ana", Scopes: []string{"payments:charge"}}

func newBudgetRig(t *testing.T, opts ...effector.Option) *budgetRig {
	t.Helper()
	amount := toolreg.Param{Name: "amount", Schema: toolreg.Schema{Type: toolreg.TypeInteger}}
	b := bindings.New([]*toolreg.Spec{
		{Name: "charge", Description: "Charge.", SideEffect: true, Params: []*toolreg.Param{&amount},
			Scopes:  []string{"payments:charge"},
			Budgets: &toolreg.Budgets{PerActivation: 2, PerEntity: &toolreg.WindowBudget{Calls: 3, Window: time.Hour}}},
		{Name: "ask", Description: "Ask first.", SideEffect: true, Params: []*toolreg.Param{&amount},
			Approval: &toolreg.Approval{}, Budgets: &toolreg.Budgets{PerEntity: &toolreg.WindowBudget{Calls: 1, Window: time.Hour}}},
	})
	r := &budgetRig{key: []byte("customer-9")}
	bindings.Effect(b, "charge", func(context.Context, chargeArgs) (int64, error) { return r.charges.Add(1), nil })
	bindings.Effect(b, "ask", func(context.Context, chargeArgs) (int64, error) { return r.charges.Add(1), nil })
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	r.bound = bound
	r.now.Store(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC).UnixMilli())
	clock := func() time.Time { return time.UnixMilli(r.now.Load()) }
	r.store = effector.NewMemoryStore(effector.WithStoreClock(clock))
	r.reader = sdkmetric.NewManualReader()
	opts = append([]effector.Option{effector.WithClock(clock), effector.WithLogger(quietLogger()),
		effector.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader)))}, opts...)
	r.e, err = effector.New(bound.Effector, r.store, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *budgetRig) clock() time.Time { return time.UnixMilli(r.now.Load()) }

// stage stages tool in activation seq as p, as the pipeline would.
func (r *budgetRig) stage(t *testing.T, p *toolreg.Principal, seq int64, tool string, amount int) *intent.Intent {
	t.Helper()
	opts := []runner.ActivationOption{runner.WithClock(r.clock)}
	if p != nil {
		opts = append(opts, runner.WithPrincipal(p))
	}
	a := runner.NewActivation(r.bound.Pipeline, r.key, seq, opts...)
	a2 := runner.NewActivation(r.bound.Pipeline, r.key, seq, runner.WithClock(r.clock), runner.WithPrincipal(payer))
	in, err := a.Act(tool, json.RawMessage(`{"amount":`+jsonInt(amount)+`}`))
	if err != nil {
		// The pipeline refuses it too; stage it as a producer that does not
		// check would, to see the effector refuse it.
		in, err = a2.Act(tool, json.RawMessage(`{"amount":`+jsonInt(amount)+`}`))
		if err != nil {
			t.Fatal(err)
		}
		in.Principal = p
	}
	return in
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

func (r *budgetRig) process(t *testing.T, in *intent.Intent) intent.Result {
	t.Helper()
	res, err := r.e.Process(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (r *budgetRig) used(t *testing.T, suffix string) int {
	t.Helper()
	n := 0
	err := r.store.BudgetUsage(context.Background(), func(u effector.BudgetUsage) error {
		if strings.HasSuffix(u.Key, suffix) {
			n += u.Used
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The effector runs an intent only for a principal holding the tool's
// scopes, whatever staged it: an intent without a principal, or whose
// principal lacks the scope, is REJECTED naming the scope, and nothing runs
// nor is counted against a budget.
func TestTheEffectorRefusesAnIntentWhosePrincipalLacksTheScopes(t *testing.T) {
	t.Parallel()
	r := newBudgetRig(t)
	for i, p := range []*toolreg.Principal{nil, {Subject: "eve", Scopes: []string{"payments:refund"}}} {
		res := r.process(t, r.stage(t, p, int64(i+1), "charge", 5))
		if res.Status != intent.StatusRejected || !strings.Contains(res.ErrorMessage, `"payments:charge"`) {
			t.Fatalf("intent of principal %v: %s %q; want REJECTED naming payments:charge", p, res.Status, res.ErrorMessage)
		}
	}
	if r.charges.Load() != 0 || r.used(t, "per_entity") != 0 {
		t.Fatalf("refused intents ran %d times, counted %d", r.charges.Load(), r.used(t, "per_entity"))
	}
	if res := r.process(t, r.stage(t, payer, 9, "charge", 5)); res.Status != intent.StatusOK {
		t.Fatalf("the payer's intent: %s %s", res.Status, res.ErrorMessage)
	}
}

// A signed intent's principal cannot be swapped for one with more
// authority: the signature covers it, and the effector refuses the forgery
// before it is claimed.
func TestAForgedPrincipalIsRefusedByTheSignature(t *testing.T) {
	t.Parallel()
	r := newBudgetRig(t, effector.WithVerify(effector.VerifyRequire, signingKeys))
	a := runner.NewActivation(r.bound.Pipeline, r.key, 1, runner.WithClock(r.clock),
		runner.WithPrincipal(payer), runner.WithSigningKey("k1", signingKeys["k1"]))
	in, err := a.Act("charge", json.RawMessage(`{"amount":5}`))
	if err != nil {
		t.Fatal(err)
	}
	forged := *in
	forged.Principal = &toolreg.Principal{Subject: "mallory", Scopes: []string{"payments:charge", "admin"}}
	_, err = r.e.Process(context.Background(), &forged)
	var re *effector.RefusedError
	if !errors.As(err, &re) || !errors.Is(err, intent.ErrBadSignature) {
		t.Fatalf("Process of the forged intent = %v, want a refusal for its signature", err)
	}
	if res := r.process(t, in); res.Status != intent.StatusOK || r.charges.Load() != 1 {
		t.Fatalf("the genuine intent: %s, %d charges", res.Status, r.charges.Load())
	}
}

// A per-entity budget is kept in the store, by intent id: the intent over
// it is REJECTED with the budget and when it frees, and stays so; a
// redelivery of a counted intent is answered, not counted; another entity
// has its own count; the window's end frees it.
func TestAPerEntityBudgetRefusesTheIntentOverIt(t *testing.T) {
	t.Parallel()
	r := newBudgetRig(t)
	start := r.clock()
	var ins []*intent.Intent
	for seq := range 3 {
		in := r.stage(t, payer, int64(seq+1), "charge", 1)
		if res := r.process(t, in); res.Status != intent.StatusOK {
			t.Fatalf("charge %d within the budget: %s %s", seq+1, res.Status, res.ErrorMessage)
		}
		ins = append(ins, in)
		r.now.Add(time.Minute.Milliseconds())
	}
	over := r.stage(t, payer, 4, "charge", 1)
	res := r.process(t, over)
	frees := start.Add(time.Hour).UTC().Format(time.RFC3339)
	if res.Status != intent.StatusRejected || !strings.Contains(res.ErrorMessage, "per_entity") || !strings.Contains(res.ErrorMessage, frees) {
		t.Fatalf("the fourth charge: %s %q; want REJECTED naming per_entity and %s", res.Status, res.ErrorMessage, frees)
	}
	if again := r.process(t, over); again.Status != intent.StatusRejected || again.ErrorMessage != res.ErrorMessage {
		t.Fatalf("the refusal redelivered: %s %q, want the stored refusal", again.Status, again.ErrorMessage)
	}
	for _, in := range ins { // redelivered: answered from the store
		if res := r.process(t, in); res.Status != intent.StatusOK {
			t.Fatalf("a redelivered charge: %s %s", res.Status, res.ErrorMessage)
		}
	}
	if r.charges.Load() != 3 || r.used(t, "per_entity") != 3 {
		t.Fatalf("%d charges ran, %d counted; want 3 and 3", r.charges.Load(), r.used(t, "per_entity"))
	}
	otherEntity := r.stage(t, payer, 1, "charge", 1)
	otherEntity.EntityKey = []byte("customer-10")
	otherEntity.ID = intent.IntentID(otherEntity.EntityKey, 1, 0)
	if res := r.process(t, otherEntity); res.Status != intent.StatusOK {
		t.Fatalf("another entity's charge: %s %s", res.Status, res.ErrorMessage)
	}
	r.now.Store(start.Add(time.Hour).UnixMilli())
	if res := r.process(t, r.stage(t, payer, 5, "charge", 1)); res.Status != intent.StatusOK {
		t.Fatalf("a charge once the first left the window: %s %s", res.Status, res.ErrorMessage)
	}
	rm := metricdata.ResourceMetrics{}
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if n := budgetRefusals(rm, "per_entity"); n != 1 {
		t.Fatalf("toolreg.effector.budget.refusals{per_entity} = %d, want 1", n)
	}
}

func budgetRefusals(rm metricdata.ResourceMetrics, budget string) int64 {
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != effector.MetricBudgetRefusals {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if v, ok := dp.Attributes.Value("toolreg.budget"); ok && v.AsString() == budget {
					n += dp.Value
				}
			}
		}
	}
	return n
}

// A per_activation budget is the activation's: Act refuses the call over
// it, and the effector counts only the per_entity budget, so intents of an
// activation within its budget all run.
func TestAPerActivationBudgetIsTheActivations(t *testing.T) {
	t.Parallel()
	r := newBudgetRig(t)
	a := runner.NewActivation(r.bound.Pipeline, r.key, 7, runner.WithClock(r.clock), runner.WithPrincipal(payer))
	var ins []*intent.Intent
	for i := range 2 {
		in, err := a.Act("charge", json.RawMessage(`{"amount":`+jsonInt(i)+`}`))
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, in)
	}
	var be *toolreg.BudgetError
	if _, err := a.Act("charge", json.RawMessage(`{"amount":9}`)); !errors.As(err, &be) || be.Budget != toolreg.BudgetPerActivation {
		t.Fatalf("the third charge of one activation: %v, want the activation to refuse it", err)
	}
	for _, in := range ins {
		if res := r.process(t, in); res.Status != intent.StatusOK {
			t.Fatal(res.ErrorMessage)
		}
	}
	if r.used(t, "per_activation") != 0 || r.used(t, "per_entity") != 2 {
		t.Fatalf("counted %d per_activation, %d per_entity; want 0 and 2", r.used(t, "per_activation"), r.used(t, "per_entity"))
	}
}

// A crash between counting and running: a worker claims and counts an
// intent, then dies before it runs. Its claim lapses; the next delivery
// reclaims it, finds it counted and runs it, without counting it again. So
// the count stays what ran (or, for an intent never delivered again, what
// may have run: its record says its effect is unknown).
func TestACrashBetweenCountingAndRunningLeavesTheCountConsistent(t *testing.T) {
	t.Parallel()
	r := newBudgetRig(t, effector.WithLease(2*time.Minute))
	in := r.stage(t, payer, 1, "charge", 1)
	// The worker that dies: it claims as the effector does, and no more.
	uses := []effector.BudgetUse{{Key: `charge entity="customer-9" per_entity`, Group: `charge entity="customer-9"`, Limit: 3, Window: time.Hour}}
	c, adm, err := r.store.ClaimAdmit(context.Background(), in.ID, effector.CallOf(in), 2*time.Minute, uses)
	if err != nil || c.State != effector.Claimed || adm.Refused != -1 {
		t.Fatalf("the dying worker's claim: %v %s %d", err, c.State, adm.Refused)
	}
	if r.used(t, "per_entity") != 1 || r.charges.Load() != 0 {
		t.Fatal("the claim did not count the intent, or it ran")
	}
	r.now.Add((3 * time.Minute).Milliseconds()) // the claim lapses
	res := r.process(t, in)
	if res.Status != intent.StatusOK || !strings.Contains(res.ErrorMessage, "effect unknown") {
		t.Fatalf("the redelivery: %s %q; want it run, as reclaimed", res.Status, res.ErrorMessage)
	}
	if r.charges.Load() != 1 || r.used(t, "per_entity") != 1 {
		t.Fatalf("%d ran, %d counted; want 1 and 1", r.charges.Load(), r.used(t, "per_entity"))
	}
}

// An approval is not counted; its execution is, once approved.
func TestAnApprovalIsCountedWhenItsCallRuns(t *testing.T) {
	t.Parallel()
	r := newBudgetRig(t)
	ctx := context.Background()
	var ids []string
	for seq := range 2 {
		res := r.process(t, r.stage(t, payer, int64(seq+1), "ask", 1))
		if res.Status != intent.StatusOK {
			t.Fatalf("approval %d: %s %s", seq+1, res.Status, res.ErrorMessage)
		}
		ids = append(ids, res.IntentID)
	}
	if r.used(t, "per_entity") != 0 {
		t.Fatal("approvals were counted against the budget")
	}
	first, err := r.e.Decide(ctx, ids[0], effector.Decision{Verdict: effector.Approve, By: "ops"})
	if err != nil || first.Status != intent.StatusOK {
		t.Fatalf("the first approved call: %v %s %s", err, first.Status, first.ErrorMessage)
	}
	second, err := r.e.Decide(ctx, ids[1], effector.Decision{Verdict: effector.Approve, By: "ops"})
	if err != nil || second.Status != intent.StatusRejected || !strings.Contains(second.ErrorMessage, "per_entity") {
		t.Fatalf("the second approved call over the budget: %v %s %q", err, second.Status, second.ErrorMessage)
	}
	if r.charges.Load() != 1 {
		t.Fatalf("ask ran %d times, want 1", r.charges.Load())
	}
}

type plainStore struct{ effector.DedupStore }

// New refuses budgets a store cannot keep: they would not be enforced.
func TestNewRefusesBudgetsWithAStoreThatKeepsNone(t *testing.T) {
	t.Parallel()
	r := newBudgetRig(t)
	_, err := effector.New(r.bound.Effector, plainStore{effector.NewMemoryStore()})
	var ce *effector.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "declares budgets") {
		t.Fatalf("New = %v, want a *ConfigError about the budgets", err)
	}
}

// No one is asked to approve a call its caller may not make: an approval
// whose principal lacks the tool's scopes is REJECTED, and nothing is
// pending. An approval of a caller who may is pending with its principal,
// which its execution carries.
func TestAnApprovalOfACallerWithoutTheScopesIsRejected(t *testing.T) {
	t.Parallel()
	amount := toolreg.Param{Name: "amount", Schema: toolreg.Schema{Type: toolreg.TypeInteger}}
	b := bindings.New([]*toolreg.Spec{{Name: "wire", Description: "Wire money.", SideEffect: true,
		Params: []*toolreg.Param{&amount}, Scopes: []string{"payments:wire"}, Approval: &toolreg.Approval{}}})
	var ranAs atomic.Value
	bindings.Effect(b, "wire", func(ctx context.Context, _ chargeArgs) (bool, error) {
		info, _ := effector.IntentFrom(ctx)
		ranAs.Store(info.Principal.String())
		return true, nil
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	store := effector.NewMemoryStore()
	e, err := effector.New(bound.Effector, store, effector.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	wirer := &toolreg.Principal{Subject: "ana", Scopes: []string{"payments:wire"}}
	stage := func(seq int64) *intent.Intent {
		a := runner.NewActivation(bound.Pipeline, []byte("acct-1"), seq, runner.WithClock(time.Now), runner.WithPrincipal(wirer))
		in, err := a.Act("wire", json.RawMessage(`{"amount":5}`))
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	forged := stage(1)
	forged.Principal = &toolreg.Principal{Subject: "eve"}
	res, err := e.Process(ctx, forged)
	if err != nil || res.Status != intent.StatusRejected || !strings.Contains(res.ErrorMessage, `"payments:wire"`) {
		t.Fatalf("the approval of eve: %v %s %q; want REJECTED naming the scope", err, res.Status, res.ErrorMessage)
	}
	n := 0
	if err := effector.Approvals(ctx, store, func(effector.Approval) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("%d approvals pending (%v), want none", n, err)
	}
	res, err = e.Process(ctx, stage(2))
	if err != nil || res.Status != intent.StatusOK {
		t.Fatalf("ana's approval: %v %s %q", err, res.Status, res.ErrorMessage)
	}
	var pending effector.Approval
	if err := effector.Approvals(ctx, store, func(a effector.Approval) error { pending = a; return nil }); err != nil || pending.Principal.String() != "ana" {
		t.Fatalf("the pending approval's principal: %+v (%v)", pending.Principal, err)
	}
	if res, err := e.Decide(ctx, pending.ID, effector.Decision{Verdict: effector.Approve, By: "ops"}); err != nil || res.Status != intent.StatusOK || ranAs.Load() != "ana" {
		t.Fatalf("the approved call: %v %s %q, ran as %v", err, res.Status, res.ErrorMessage, ranAs.Load())
	}
}
