package effector_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/runner"
)

const bigRefundManifest = `name: big_refund
description: Refund a large amount, once a person approves it.
side_effect: true
params:
  order_id: {type: string}
  amount: {type: integer, minimum: 1}
approval: required
approval_reason: Refunds above 500 need a second person.
approval_timeout: 1h
`

type bigRefundArgs struct {
	OrderID string `json:"order_id"`
	Amount  int    `json:"amount"`
}

// approvals is an effector whose big_refund tool requires approval, the
// pipeline table that stages it, and what the tool saw.
type approvals struct {
	bound *bindings.Bound
	eff   *effector.Effector
	store effector.DedupStore
	now   atomic.Int64 // the clock, ms

	runs  atomic.Int32
	mu    sync.Mutex
	seen  []string // the arguments of each run, as JSON
	onRun func()   // called on each run, when set
	// nested is called with its context on each run of echoApprovals'
	// big_refund, when set.
	nested func(context.Context)
}

func newApprovals(t testing.TB, store effector.DedupStore, opts ...effector.Option) *approvals {
	t.Helper()
	a, err := buildApprovals(store, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func buildApprovals(store effector.DedupStore, opts ...effector.Option) (*approvals, error) {
	specs, err := loader.LoadFS(fstest.MapFS{"m.yaml": {Data: []byte(bigRefundManifest)}}, "m.yaml")
	if err != nil {
		return nil, err
	}
	a := &approvals{store: store}
	a.now.Store(t0.UnixMilli())
	b := bindings.New(specs)
	bindings.Effect(b, "big_refund", func(ctx context.Context, args bigRefundArgs) (map[string]any, error) {
		a.runs.Add(1)
		if a.onRun != nil {
			a.onRun()
		}
		j, _ := json.Marshal(args)
		a.mu.Lock()
		a.seen = append(a.seen, string(j))
		a.mu.Unlock()
		return map[string]any{"refunded": args.Amount}, nil
	})
	if a.bound, err = b.Bind(); err != nil {
		return nil, err
	}
	opts = append([]effector.Option{effector.WithClock(a.clock), effector.WithLogger(quietLogger())}, opts...)
	if a.eff, err = effector.New(a.bound.Effector, store, opts...); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *approvals) clock() time.Time { return time.UnixMilli(a.now.Load()) }

// stage stages big_refund at seq with args, as the pipeline does, and has
// the effector process the APPROVAL intent.
func (a *approvals) stage(t testing.TB, seq int64, args string) *intent.Intent {
	t.Helper()
	act := runner.NewActivation(a.bound.Pipeline, []byte("customer-7"), seq, runner.WithClock(a.clock))
	in, err := act.Act("big_refund", json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.eff.Process(context.Background(), in)
	if err != nil || res.Status != intent.StatusOK {
		t.Fatalf("Process(APPROVAL) = %s %q, %v; want OK", res.Status, res.ErrorMessage, err)
	}
	return in
}

func approver(v effector.Verdict, note string) effector.Decision {
	return effector.Decision{Verdict: v, By: "ana@example.com", Note: note}
}

func TestAnApprovedCallRunsOnceWithExactlyTheStagedArguments(t *testing.T) {
	t.Parallel()
	a := newApprovals(t, effector.NewMemoryStore())
	ctx := context.Background()
	in := a.stage(t, 1, `{"amount":900.0,"order_id":"o-9"}`)
	if a.runs.Load() != 0 {
		t.Fatal("staging an approval ran the tool")
	}
	ap, err := effector.LookupApproval(ctx, a.store, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ap.State != effector.ApprovalPending || ap.Tool != "big_refund" || string(ap.Arguments) != `{"amount":900,"order_id":"o-9"}` ||
		ap.Reason != "Refunds above 500 need a second person." || !ap.ExpiresAt.Equal(t0.Add(time.Hour)) || ap.ExecutionID != intent.ExecutionID(in.ID) {
		t.Fatalf("pending approval = %+v", ap)
	}
	res, err := a.eff.Decide(ctx, in.ID, approver(effector.Approve, "checked the order"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != intent.StatusOK || res.IntentID != intent.ExecutionID(in.ID) || string(res.Payload) != `{"refunded":900}` {
		t.Fatalf("Decide = %s %q for %q", res.Status, res.Payload, res.IntentID)
	}
	again, err := a.eff.Decide(ctx, in.ID, approver(effector.Approve, "twice"))
	if err != nil {
		t.Fatal(err)
	}
	resumed, err := a.eff.Resume(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(marshal(t, res), marshal(t, again)) || !bytes.Equal(marshal(t, res), marshal(t, resumed)) {
		t.Error("a second approve or a Resume gave another result")
	}
	if n := a.runs.Load(); n != 1 || a.seen[0] != `{"order_id":"o-9","amount":900}` {
		t.Fatalf("runs = %d with %v, want 1 with the staged arguments", n, a.seen)
	}
	ap, err = effector.LookupApproval(ctx, a.store, in.ID)
	if err != nil || ap.State != effector.ApprovalApproved || ap.Decision.By != "ana@example.com" || ap.Decision.Note != "checked the order" || ap.Result == nil || ap.Result.Status != intent.StatusOK {
		t.Fatalf("approved approval = %+v, %v", ap, err)
	}
}

func TestADenialIsRejectedWithItsNoteAndApproveAfterItIsRefused(t *testing.T) {
	t.Parallel()
	a := newApprovals(t, effector.NewMemoryStore())
	ctx := context.Background()
	in := a.stage(t, 2, `{"amount":700,"order_id":"o-2"}`)
	res, err := a.eff.Decide(ctx, in.ID, approver(effector.Deny, "the customer already got a voucher"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != intent.StatusRejected || res.IntentID != intent.ExecutionID(in.ID) ||
		!strings.Contains(res.ErrorMessage, "the customer already got a voucher") || !strings.Contains(res.ErrorMessage, "ana@example.com") {
		t.Fatalf("Decide(deny) = %s %q", res.Status, res.ErrorMessage)
	}
	_, err = a.eff.Decide(ctx, in.ID, effector.Decision{Verdict: effector.Approve, By: "bob"})
	var conflict *effector.DecisionConflictError
	if !errors.As(err, &conflict) || conflict.Recorded.Verdict != effector.Deny || conflict.Asked != effector.Approve || conflict.ApprovalID != in.ID {
		t.Fatalf("approve after deny: %v, want a *DecisionConflictError", err)
	}
	again, err := a.eff.Decide(ctx, in.ID, approver(effector.Deny, "again"))
	if err != nil || !bytes.Equal(marshal(t, res), marshal(t, again)) {
		t.Fatalf("a second deny: %v, or another result", err)
	}
	if n := a.runs.Load(); n != 0 {
		t.Fatalf("a denied call ran %d times", n)
	}
}

func TestADecisionAfterTheDeadlineIsRefusedAndTheCallExpires(t *testing.T) {
	t.Parallel()
	a := newApprovals(t, effector.NewMemoryStore())
	ctx := context.Background()
	in := a.stage(t, 3, `{"amount":700,"order_id":"o-3"}`)
	a.now.Add(time.Hour.Milliseconds()) // the deadline
	_, err := a.eff.Decide(ctx, in.ID, approver(effector.Approve, ""))
	var exp *effector.ApprovalExpiredError
	if !errors.As(err, &exp) || exp.ApprovalID != in.ID {
		t.Fatalf("Decide at the deadline: %v, want an *ApprovalExpiredError", err)
	}
	ap, err := effector.LookupApproval(ctx, a.store, in.ID)
	if err != nil || ap.State != effector.ApprovalExpired || ap.Result == nil || ap.Result.Status != intent.StatusExpired {
		t.Fatalf("expired approval = %+v, %v; want expired, its execution EXPIRED", ap, err)
	}
	if _, err := a.eff.Decide(ctx, in.ID, approver(effector.Deny, "")); !errors.As(err, &exp) {
		t.Fatalf("a later deny: %v, want *ApprovalExpiredError", err)
	}
	if n := a.runs.Load(); n != 0 {
		t.Fatalf("an expired approval ran %d times", n)
	}

	// Undecided past its deadline, Resume records the expiry.
	a.now.Store(t0.UnixMilli())
	late := a.stage(t, 4, `{"amount":700,"order_id":"o-4"}`)
	if _, err := a.eff.Resume(ctx, late.ID); !errors.Is(err, effector.ErrUndecided) {
		t.Fatalf("Resume before a decision: %v, want ErrUndecided", err)
	}
	a.now.Add(2 * time.Hour.Milliseconds())
	res, err := a.eff.Resume(ctx, late.ID)
	if err != nil || res.Status != intent.StatusExpired {
		t.Fatalf("Resume past the deadline = %s, %v; want EXPIRED", res.Status, err)
	}
}

func TestAnUnknownApprovalIsRefused(t *testing.T) {
	t.Parallel()
	a := newApprovals(t, effector.NewMemoryStore())
	ctx := context.Background()
	tool := intentFor("refund", `{}`, 9) // any id that is not an approval
	for _, id := range []string{"no-such-approval", tool.ID} {
		if _, err := a.eff.Decide(ctx, id, approver(effector.Approve, "")); !errors.Is(err, effector.ErrUnknownApproval) {
			t.Errorf("Decide(%q): %v, want ErrUnknownApproval", id, err)
		}
	}
	if _, err := a.eff.Decide(ctx, "x", effector.Decision{Verdict: effector.Approve}); err == nil || !strings.Contains(err.Error(), "Decision.By") {
		t.Errorf("a decision by no one: %v, want it refused", err)
	}
	// An approval of a call that breaks the contract is rejected at once.
	act := runner.NewActivation(a.bound.Pipeline, []byte("customer-7"), 5, runner.WithClock(a.clock))
	in, err := act.Act("big_refund", json.RawMessage(`{"amount":5,"order_id":"o-5"}`))
	if err != nil {
		t.Fatal(err)
	}
	in.ArgsJSON = []byte(`{"amount":0,"order_id":"o-5"}`) // below its minimum
	res, err := a.eff.Process(ctx, in)
	if err != nil || res.Status != intent.StatusRejected {
		t.Fatalf("Process(an approval of an invalid call) = %s, %v; want REJECTED", res.Status, err)
	}
	if _, err := effector.LookupApproval(ctx, a.store, in.ID); !errors.Is(err, effector.ErrUnknownApproval) {
		t.Fatalf("LookupApproval of a rejected one: %v, want ErrUnknownApproval", err)
	}
}

func TestAToolThatRequiresApprovalNeverRunsWithoutIt(t *testing.T) {
	t.Parallel()
	a := newApprovals(t, effector.NewMemoryStore())
	ctx := context.Background()
	in := a.stage(t, 6, `{"amount":700,"order_id":"o-6"}`)

	// A TOOL intent under the plain id, as an older pipeline would stage.
	plain := *in
	plain.Kind = intent.KindTool
	plain.ID = intent.IntentID(in.EntityKey, in.Seq, in.StepIndex+1)
	plain.StepIndex++
	res, err := a.eff.Process(ctx, &plain)
	if err != nil || res.Status != intent.StatusRejected || !strings.Contains(res.ErrorMessage, "approval") {
		t.Fatalf("a plain TOOL intent = %s %q, %v; want REJECTED saying it needs approval", res.Status, res.ErrorMessage, err)
	}

	// A forged execution before anyone decided: refused, not recorded.
	forged := *in
	forged.Kind = intent.KindTool
	forged.ID = intent.ExecutionID(in.ID)
	var refused *effector.RefusedError
	if _, err := a.eff.Process(ctx, &forged); !errors.As(err, &refused) || !errors.Is(err, effector.ErrUndecided) {
		t.Fatalf("an execution before the decision: %v, want a *RefusedError (undecided)", err)
	}
	// With other arguments after the approval: refused.
	if _, err := effector.RecordDecision(ctx, a.store, in.ID, effector.Decision{Verdict: effector.Approve, By: "ana", At: a.clock()}); err != nil {
		t.Fatal(err)
	}
	other := forged
	other.ArgsJSON = []byte(`{"amount":70000,"order_id":"o-6"}`)
	if _, err := a.eff.Process(ctx, &other); !errors.As(err, &refused) {
		t.Fatalf("an execution with other arguments: %v, want a *RefusedError", err)
	}
	if n := a.runs.Load(); n != 0 {
		t.Fatalf("the tool ran %d times without an approval of the call", n)
	}
	// The forgeries poisoned nothing: the approved call still runs, once.
	res, err = a.eff.Resume(ctx, in.ID)
	if err != nil || res.Status != intent.StatusOK || a.runs.Load() != 1 {
		t.Fatalf("Resume after the approval = %s %q, %v, runs %d", res.Status, res.ErrorMessage, err, a.runs.Load())
	}
}

// TestConcurrentDecisionsOnOneApprovalRunTheCallOnce: many goroutines
// approve and deny one approval at once; one decision wins, every caller
// either gets its outcome or a conflict, and the call runs at most once.
func TestConcurrentDecisionsOnOneApprovalRunTheCallOnce(t *testing.T) {
	t.Parallel()
	for name, store := range replayStores(t) {
		t.Run(name, func(t *testing.T) {
			a := newApprovals(t, store)
			ctx := context.Background()
			in := a.stage(t, 7, `{"amount":800,"order_id":"o-7"}`)
			var wg sync.WaitGroup
			results := make([]intent.Result, 24)
			errs := make([]error, 24)
			for i := range 24 {
				wg.Go(func() {
					v := effector.Approve
					if i%3 == 0 {
						v = effector.Deny
					}
					results[i], errs[i] = a.eff.Decide(ctx, in.ID, effector.Decision{Verdict: v, By: fmt.Sprint("person-", i)})
				})
			}
			wg.Wait()
			ap, err := effector.LookupApproval(ctx, a.store, in.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := intent.StatusOK
			if ap.State == effector.ApprovalDenied {
				want = intent.StatusRejected
			}
			for i := range 24 {
				var conflict *effector.DecisionConflictError
				switch {
				case errors.As(errs[i], &conflict):
				case errs[i] != nil:
					t.Errorf("decider %d: %v", i, errs[i])
				case results[i].Status != want:
					t.Errorf("decider %d got %s, want %s (the winning decision's)", i, results[i].Status, want)
				}
			}
			wantRuns := int32(1)
			if ap.State == effector.ApprovalDenied {
				wantRuns = 0
			}
			if n := a.runs.Load(); n != wantRuns {
				t.Fatalf("approval %s: the call ran %d times, want %d", ap.State, n, wantRuns)
			}
		})
	}
}

// TestADecisionRecordedElsewhereIsCarriedOutOnceAfterARestart: a decision
// recorded by another process (the CLI's path: RecordDecision, no tools)
// and an effector that stops before executing it; an effector started on
// the same SQLite file runs the call once, and a third finds it done.
func TestADecisionRecordedElsewhereIsCarriedOutOnceAfterARestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "dedup.db")
	open := func() *sqlitestore.Store {
		s, err := sqlitestore.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ctx := context.Background()
	first := newApprovals(t, open())
	in := first.stage(t, 8, `{"amount":600,"order_id":"o-8"}`)
	cli := open() // another process's handle, with no tools
	if _, err := effector.RecordDecision(ctx, cli, in.ID, effector.Decision{Verdict: effector.Approve, By: "ana", At: first.clock()}); err != nil {
		t.Fatal(err)
	}
	// first "crashes" here: it never learns of the decision.
	second := newApprovals(t, open())
	res, err := second.eff.Resume(ctx, in.ID)
	if err != nil || res.Status != intent.StatusOK {
		t.Fatalf("Resume after the restart = %s %q, %v", res.Status, res.ErrorMessage, err)
	}
	third := newApprovals(t, open())
	again, err := third.eff.Resume(ctx, in.ID)
	if err != nil || !bytes.Equal(marshal(t, res), marshal(t, again)) {
		t.Fatalf("a third effector's Resume: %v, or another result", err)
	}
	if n := first.runs.Load() + second.runs.Load() + third.runs.Load(); n != 1 {
		t.Fatalf("the approved call ran %d times, want 1", n)
	}
	var listed []effector.Approval
	if err := effector.Approvals(ctx, cli, func(a effector.Approval) error { listed = append(listed, a); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].ID != in.ID || listed[0].State != effector.ApprovalApproved || listed[0].Result == nil {
		t.Fatalf("Approvals = %+v, want the one approval, approved with its result", listed)
	}
}

// TestTwoEffectorsOnOneSQLiteFileApprovingAtOnceRunTheCallOnce: two
// effectors, each with its own handle on one SQLite file (two processes'
// worth), approve one approval from many goroutines each.
func TestTwoEffectorsOnOneSQLiteFileApprovingAtOnceRunTheCallOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "dedup.db")
	var effs []*approvals
	for range 2 {
		s, err := sqlitestore.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		effs = append(effs, newApprovals(t, s))
	}
	ctx := context.Background()
	in := effs[0].stage(t, 9, `{"amount":650,"order_id":"o-9"}`)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got [][]byte
	for i := range 16 {
		wg.Go(func() {
			a := effs[i%2]
			res, err := a.eff.Decide(ctx, in.ID, effector.Decision{Verdict: effector.Approve, By: fmt.Sprint("person-", i), At: a.clock()})
			if err != nil {
				t.Errorf("decider %d: %v", i, err)
				return
			}
			mu.Lock()
			got = append(got, marshal(t, res))
			mu.Unlock()
		})
	}
	wg.Wait()
	if n := effs[0].runs.Load() + effs[1].runs.Load(); n != 1 {
		t.Fatalf("the approved call ran %d times across two effectors, want 1", n)
	}
	for _, b := range got[1:] {
		if !bytes.Equal(b, got[0]) {
			t.Fatal("deciders got different results")
		}
	}
}

// TestResumeDecidedCarriesOutWhatOthersDecided: decisions recorded without
// the effector (the CLI's path) are carried out by ResumeDecided, each
// published once; pending ones wait, overdue ones are published EXPIRED,
// and a second pass finds nothing to do.
func TestResumeDecidedCarriesOutWhatOthersDecided(t *testing.T) {
	t.Parallel()
	a := newApprovals(t, effector.NewMemoryStore())
	ctx := context.Background()
	ok := a.stage(t, 11, `{"amount":600,"order_id":"o-11"}`)
	no := a.stage(t, 12, `{"amount":600,"order_id":"o-12"}`)
	waiting := a.stage(t, 13, `{"amount":600,"order_id":"o-13"}`)
	for _, d := range []struct {
		id string
		v  effector.Verdict
	}{{ok.ID, effector.Approve}, {no.ID, effector.Deny}} {
		if _, err := effector.RecordDecision(ctx, a.store, d.id, effector.Decision{Verdict: d.v, By: "cli", At: a.clock()}); err != nil {
			t.Fatal(err)
		}
	}
	published := map[string]intent.Status{}
	publish := func(_ context.Context, r intent.Result) error { published[r.IntentID] = r.Status; return nil }
	n, err := a.eff.ResumeDecided(ctx, publish)
	if err != nil || n != 2 {
		t.Fatalf("ResumeDecided = %d, %v; want 2", n, err)
	}
	want := map[string]intent.Status{intent.ExecutionID(ok.ID): intent.StatusOK, intent.ExecutionID(no.ID): intent.StatusRejected}
	if fmt.Sprint(published) != fmt.Sprint(want) || a.runs.Load() != 1 {
		t.Fatalf("published %v with %d runs, want %v and 1 run", published, a.runs.Load(), want)
	}
	if n, err := a.eff.ResumeDecided(ctx, publish); err != nil || n != 0 {
		t.Fatalf("a second ResumeDecided = %d, %v; want nothing to do", n, err)
	}
	a.now.Add(2 * time.Hour.Milliseconds())
	clear(published)
	if n, err := a.eff.ResumeDecided(ctx, publish); err != nil || n != 1 || published[intent.ExecutionID(waiting.ID)] != intent.StatusExpired {
		t.Fatalf("ResumeDecided past the deadline = %d, %v, %v; want the pending one EXPIRED", n, err, published)
	}
	if a.runs.Load() != 1 {
		t.Fatalf("runs = %d, want 1", a.runs.Load())
	}
}

// TestAnApprovedCallIsSignedWithTheApprovalsKey: with signatures required,
// the execution of an approval staged with a signing key is signed with
// that key, so it passes verification and runs; Decide never needs an
// unsigned path.
func TestAnApprovedCallIsSignedWithTheApprovalsKey(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{7}, 32)
	a := newApprovals(t, effector.NewMemoryStore(), effector.WithVerify(effector.VerifyRequire, map[string][]byte{"k1": key}))
	act := runner.NewActivation(a.bound.Pipeline, []byte("customer-7"), 41, runner.WithClock(a.clock), runner.WithSigningKey("k1", key))
	in, err := act.Act("big_refund", json.RawMessage(`{"amount":800,"order_id":"o-41"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := a.eff.Process(context.Background(), in); err != nil || res.Status != intent.StatusOK {
		t.Fatalf("Process(signed APPROVAL) = %s, %v", res.Status, err)
	}
	res, err := a.eff.Decide(context.Background(), in.ID, effector.Decision{Verdict: effector.Approve, By: "ana", At: a.clock()})
	if err != nil || res.Status != intent.StatusOK || a.runs.Load() != 1 {
		t.Fatalf("Decide under VerifyRequire = %s %q, %v, runs %d; want the signed execution to run once", res.Status, res.ErrorMessage, err, a.runs.Load())
	}
	// An unsigned approval is refused at the door, so it never gets a decision.
	unsigned := *in
	unsigned.ID = intent.IntentID(in.EntityKey, 42, 0)
	unsigned.Seq, unsigned.SigningKeyID, unsigned.Signature, unsigned.SignatureScheme = 42, "", nil, intent.SchemeUnspecified
	var refused *effector.RefusedError
	if _, err := a.eff.Process(context.Background(), &unsigned); !errors.As(err, &refused) {
		t.Fatalf("Process(unsigned APPROVAL) under VerifyRequire: %v, want a *RefusedError", err)
	}
}

// TestAToolResultThatLooksLikeAnApprovalIsNotOne: a tool whose own result
// starts like an approval request's payload is neither listed nor
// decidable, and does not break the listing of real ones.
func TestAToolResultThatLooksLikeAnApprovalIsNotOne(t *testing.T) {
	t.Parallel()
	store := effector.NewMemoryStore()
	a := newApprovals(t, store)
	ctx := context.Background()
	real := a.stage(t, 51, `{"amount":800,"order_id":"o-51"}`)
	c, err := store.Claim(ctx, "lookalike", effector.NewCall("notify", []byte(`{}`)), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	fake := intent.Result{IntentID: "lookalike", Status: intent.StatusOK, Payload: []byte(`{"approval":"requested","execution_id":"x","tool":"big_refund"}`)}
	b, err := fake.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Complete(ctx, "lookalike", c.Token, b, time.Hour); err != nil {
		t.Fatal(err)
	}
	var ids []string
	if err := effector.Approvals(ctx, store, func(ap effector.Approval) error { ids = append(ids, ap.ID); return nil }); err != nil {
		t.Fatalf("Approvals with a look-alike record: %v", err)
	}
	if len(ids) != 1 || ids[0] != real.ID {
		t.Fatalf("Approvals = %v, want only %s", ids, real.ID)
	}
	if _, err := a.eff.Decide(ctx, "lookalike", approver(effector.Approve, "")); !errors.Is(err, effector.ErrUnknownApproval) {
		t.Fatalf("Decide on a look-alike: %v, want ErrUnknownApproval", err)
	}
}

// TestAnApprovedCallCarriedOutTooLateIsRecordedExpired: a decision made in
// time whose execution no one started within the approval's lifetime is not
// run late; its EXPIRED is recorded once, so ResumeDecided stops returning
// to it.
func TestAnApprovedCallCarriedOutTooLateIsRecordedExpired(t *testing.T) {
	t.Parallel()
	a := newApprovals(t, effector.NewMemoryStore())
	ctx := context.Background()
	in := a.stage(t, 61, `{"amount":800,"order_id":"o-61"}`)
	if _, err := effector.RecordDecision(ctx, a.store, in.ID, effector.Decision{Verdict: effector.Approve, By: "ana", At: a.clock()}); err != nil {
		t.Fatal(err)
	}
	a.now.Add(3 * time.Hour.Milliseconds()) // the effector was down past the approval's hour
	var published []intent.Result
	publish := func(_ context.Context, r intent.Result) error { published = append(published, r); return nil }
	for range 2 {
		if _, err := a.eff.ResumeDecided(ctx, publish); err != nil {
			t.Fatal(err)
		}
	}
	if len(published) != 1 || published[0].Status != intent.StatusExpired || a.runs.Load() != 0 {
		t.Fatalf("published %+v with %d runs, want one EXPIRED and no run", published, a.runs.Load())
	}
	ap, err := effector.LookupApproval(ctx, a.store, in.ID)
	if err != nil || ap.Result == nil || ap.Result.Status != intent.StatusExpired {
		t.Fatalf("LookupApproval = %+v, %v; want its execution recorded EXPIRED", ap, err)
	}
}

// idleSource delivers nothing until its context ends.
type idleSource struct{}

func (idleSource) Receive(ctx context.Context) (effector.Delivery, error) {
	<-ctx.Done()
	return effector.Delivery{}, ctx.Err()
}

// collectingSink keeps what it is given; the first fail publishes fail.
type collectingSink struct {
	mu   sync.Mutex
	fail int
	got  []intent.Result
}

func (s *collectingSink) Publish(_ context.Context, r intent.Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		return errors.New("results stream unavailable")
	}
	s.got = append(s.got, r)
	return nil
}

func (s *collectingSink) results() []intent.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// TestServeCarriesOutDecisionsRecordedElsewhere: with WithDecisions, Serve
// runs an approval decided by another process (the CLI's RecordDecision)
// once and publishes its outcome, even when the first publish fails, and
// publishes each outcome once over many passes.
func TestServeCarriesOutDecisionsRecordedElsewhere(t *testing.T) {
	t.Parallel()
	a := newApprovals(t, effector.NewMemoryStore())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	yes := a.stage(t, 71, `{"amount":800,"order_id":"o-71"}`)
	no := a.stage(t, 72, `{"amount":800,"order_id":"o-72"}`)
	sink := &collectingSink{fail: 1}
	served := make(chan error, 1)
	go func() {
		served <- effector.Serve(ctx, idleSource{}, sink, a.eff, effector.WithDecisions(10*time.Millisecond), effector.WithServeLogger(quietLogger()))
	}()
	for _, d := range []struct {
		id string
		v  effector.Verdict
	}{{yes.ID, effector.Approve}, {no.ID, effector.Deny}} {
		if _, err := effector.RecordDecision(context.Background(), a.store, d.id, effector.Decision{Verdict: d.v, By: "cli", At: a.clock()}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(sink.results()) < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a few more passes, which must publish nothing
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	got := map[string]intent.Status{}
	for _, r := range sink.results() {
		if _, dup := got[r.IntentID]; dup {
			t.Errorf("%s published twice", r.IntentID)
		}
		got[r.IntentID] = r.Status
	}
	if got[intent.ExecutionID(yes.ID)] != intent.StatusOK || got[intent.ExecutionID(no.ID)] != intent.StatusRejected || len(got) != 2 {
		t.Fatalf("published %v, want the approved call OK and the denied one REJECTED", got)
	}
	if n := a.runs.Load(); n != 1 {
		t.Fatalf("the approved call ran %d times, want 1", n)
	}
	if err := effector.Serve(ctx, idleSource{}, sink, struct{ effector.Processor }{a.eff}, effector.WithDecisions(time.Second)); err == nil || !strings.Contains(err.Error(), "WithDecisions needs the *Effector") {
		t.Errorf("WithDecisions with another processor: %v, want it refused", err)
	}
}
