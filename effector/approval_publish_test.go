package effector_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
)

// The outcome of a decision someone else recorded (the CLI's) reaches the
// pipeline only through ResumeDecided's publish: no delivery of it exists
// for a transport to deliver again. These tests hold it to publishing every
// such outcome, even when the publish fails and the effector stops, and
// once when two effectors resume at once.

// restarted is another effector (another process) on a's store, at a's time.
func restarted(t *testing.T, a *approvals) *approvals {
	t.Helper()
	b := newApprovals(t, a.store)
	b.now.Store(a.now.Load())
	return b
}

// publications collects what a ResumeDecided pass publishes.
type publications struct {
	mu  sync.Mutex
	got []intent.Result
}

func (p *publications) publish(_ context.Context, r intent.Result) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, r)
	return nil
}

func (p *publications) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := ""
	for _, r := range p.got {
		s += fmt.Sprintf("[%s %s %s]", r.IntentID, r.Status, r.Payload)
	}
	return s
}

func (p *publications) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.got)
}

func decideElsewhere(t *testing.T, a *approvals, id string, v effector.Verdict) {
	t.Helper()
	if _, err := effector.RecordDecision(context.Background(), a.store, id, effector.Decision{Verdict: v, By: "cli", At: a.clock()}); err != nil {
		t.Fatal(err)
	}
}

// TestAnOutcomeWhosePublishFailedIsPublishedByTheNextEffector: the
// effector carries out an approved call, its publish fails, and it stops
// (a crash, a deploy). Another effector on the store publishes the
// recorded outcome once the first one's publication lease has run out
// (not before: the first may still be publishing), without running the
// call again, and only once.
func TestAnOutcomeWhosePublishFailedIsPublishedByTheNextEffector(t *testing.T) {
	t.Parallel()
	a, c := clockedApprovals(t)
	ctx := context.Background()
	in := a.stage(t, 1, `{"amount":900,"order_id":"o-1"}`)
	decideElsewhere(t, a, in.ID, effector.Approve)
	down := errors.New("results stream unavailable")
	if _, err := a.eff.ResumeDecided(ctx, func(context.Context, intent.Result) error { return down }); !errors.Is(err, down) {
		t.Fatalf("ResumeDecided with the sink down: %v, want its error", err)
	}
	if a.runs.Load() != 1 {
		t.Fatalf("the approved call ran %d times, want 1", a.runs.Load())
	}

	b := restarted(t, a)
	var got publications
	if n, err := b.eff.ResumeDecided(ctx, got.publish); err != nil || n != 0 || got.len() != 0 {
		t.Fatalf("ResumeDecided while the first effector's lease holds = %d, %v, published %v; want nothing yet", n, err, &got)
	}
	b.advance(c, effector.DefaultLease+time.Second)
	if n, err := b.eff.ResumeDecided(ctx, got.publish); err != nil || n != 1 {
		t.Fatalf("ResumeDecided after the lease = %d, %v; want the outcome published", n, err)
	}
	want := fmt.Sprintf("[%s OK {\"refunded\":900}]", intent.ExecutionID(in.ID))
	if got.String() != want {
		t.Fatalf("published %v, want %s", &got, want)
	}
	if a.runs.Load()+b.runs.Load() != 1 {
		t.Fatalf("the approved call ran %d times in all, want 1", a.runs.Load()+b.runs.Load())
	}
	for _, d := range []time.Duration{0, effector.DefaultLease + time.Second} {
		b.advance(c, d)
		if n, err := b.eff.ResumeDecided(ctx, got.publish); err != nil || n != 0 || got.len() != 1 {
			t.Fatalf("a later pass = %d, %v, published %v; want nothing more", n, err, &got)
		}
		if n, err := a.eff.ResumeDecided(ctx, got.publish); err != nil || n != 0 || got.len() != 1 {
			t.Fatalf("a later pass of the first effector = %d, %v, published %v; want nothing more", n, err, &got)
		}
	}
}

// TestAPublishThatFailedIsRetriedAtTheNextPass: the effector that
// carried out the call and failed to publish its outcome publishes it at
// its next pass, without waiting for its own lease, and then never again;
// the failure does not hold up the other approval's outcome.
func TestAPublishThatFailedIsRetriedAtTheNextPass(t *testing.T) {
	t.Parallel()
	a, _ := clockedApprovals(t)
	ctx := context.Background()
	yes := a.stage(t, 1, `{"amount":900,"order_id":"o-1"}`)
	no := a.stage(t, 2, `{"amount":900,"order_id":"o-2"}`)
	decideElsewhere(t, a, yes.ID, effector.Approve)
	decideElsewhere(t, a, no.ID, effector.Deny)
	down := errors.New("results stream unavailable")
	fails := 1
	var got publications
	flaky := func(ctx context.Context, r intent.Result) error {
		if fails > 0 {
			fails--
			return down
		}
		return got.publish(ctx, r)
	}
	if n, err := a.eff.ResumeDecided(ctx, flaky); !errors.Is(err, down) || n != 1 {
		t.Fatalf("first pass = %d, %v; want the sink's error, and the other outcome published", n, err)
	}
	if n, err := a.eff.ResumeDecided(ctx, flaky); err != nil || n != 1 {
		t.Fatalf("second pass = %d, %v; want the failed outcome published", n, err)
	}
	if n, err := a.eff.ResumeDecided(ctx, flaky); err != nil || n != 0 {
		t.Fatalf("third pass = %d, %v; want nothing", n, err)
	}
	seen := map[string]intent.Status{}
	for _, r := range got.got {
		if _, dup := seen[r.IntentID]; dup {
			t.Errorf("%s published twice: %v", r.IntentID, &got)
		}
		seen[r.IntentID] = r.Status
	}
	if seen[intent.ExecutionID(yes.ID)] != intent.StatusOK || seen[intent.ExecutionID(no.ID)] != intent.StatusRejected || len(seen) != 2 {
		t.Fatalf("published %v, want the approved call OK and the denied one REJECTED", &got)
	}
	if a.runs.Load() != 1 {
		t.Fatalf("the approved call ran %d times, want 1", a.runs.Load())
	}
}

// TestAnEffectorStoppedRightAfterTakingAPublicationLeavesItToTheNext: an
// effector that took an approval's publication and stopped before running
// the call leaves the approval to the next effector once its lease runs
// out: the call runs once and its outcome is published once.
func TestAnEffectorStoppedRightAfterTakingAPublicationLeavesItToTheNext(t *testing.T) {
	t.Parallel()
	a, c := clockedApprovals(t)
	ctx := context.Background()
	in := a.stage(t, 1, `{"amount":900,"order_id":"o-1"}`)
	decideElsewhere(t, a, in.ID, effector.Approve)
	ap, err := effector.LookupApproval(ctx, a.store, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	// What ResumeDecided takes first: the approval's publication.
	if cl, err := a.store.Claim(ctx, intent.PublicationID(in.ID), effector.NewCall(ap.Tool, ap.Arguments), effector.DefaultLease); err != nil || cl.State != effector.Claimed {
		t.Fatalf("claiming the publication: %+v, %v", cl, err)
	}
	b := restarted(t, a)
	var got publications
	if n, err := b.eff.ResumeDecided(ctx, got.publish); err != nil || n != 0 || b.runs.Load() != 0 {
		t.Fatalf("ResumeDecided while the lease holds = %d, %v, %d runs; want nothing", n, err, b.runs.Load())
	}
	b.advance(c, effector.DefaultLease+time.Second)
	if n, err := b.eff.ResumeDecided(ctx, got.publish); err != nil || n != 1 || b.runs.Load() != 1 {
		t.Fatalf("ResumeDecided after the lease = %d, %v, %d runs; want the call run and published once", n, err, b.runs.Load())
	}
	if want := fmt.Sprintf("[%s OK {\"refunded\":900}]", intent.ExecutionID(in.ID)); got.String() != want {
		t.Fatalf("published %v, want %s", &got, want)
	}
}

// TestTwoEffectorsResumingAtOncePublishEachOutcomeOnce: two effectors'
// passes over the same decided approvals, at once (and two of one of
// them), run each call once and publish each outcome once between them.
func TestTwoEffectorsResumingAtOncePublishEachOutcomeOnce(t *testing.T) {
	t.Parallel()
	for round := range 10 {
		a, _ := clockedApprovals(t)
		b := restarted(t, a)
		ctx := context.Background()
		var ids []string
		for seq := range int64(4) {
			in := a.stage(t, seq+1, fmt.Sprintf(`{"amount":900,"order_id":"o-%d"}`, seq))
			decideElsewhere(t, a, in.ID, effector.Approve)
			ids = append(ids, intent.ExecutionID(in.ID))
		}
		var got publications
		var wg sync.WaitGroup
		// Two passes of one effector, beside another effector's.
		for _, e := range []*effector.Effector{a.eff, b.eff, a.eff} {
			wg.Go(func() {
				if _, err := e.ResumeDecided(ctx, got.publish); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		// A pass that found an approval being published by the other
		// leaves it; the next passes must still publish nothing twice.
		for _, e := range []*effector.Effector{a.eff, b.eff} {
			if _, err := e.ResumeDecided(ctx, got.publish); err != nil {
				t.Fatal(err)
			}
		}
		count := map[string]int{}
		for _, r := range got.got {
			count[r.IntentID]++
		}
		for _, id := range ids {
			if count[id] != 1 {
				t.Fatalf("round %d: %s published %d times: %v", round, id, count[id], &got)
			}
		}
		if runs := a.runs.Load() + b.runs.Load(); runs != 4 {
			t.Fatalf("round %d: %d runs of 4 approved calls", round, runs)
		}
	}
}

// TestAnOutcomeDecideReturnedIsNotPublishedAgain: Decide returns the
// outcome to its caller, who publishes it; ResumeDecided, in this effector
// or another, must not publish it again.
func TestAnOutcomeDecideReturnedIsNotPublishedAgain(t *testing.T) {
	t.Parallel()
	a, c := clockedApprovals(t)
	ctx := context.Background()
	in := a.stage(t, 1, `{"amount":900,"order_id":"o-1"}`)
	if res, err := a.eff.Decide(ctx, in.ID, approver(effector.Approve, "")); err != nil || res.Status != intent.StatusOK {
		t.Fatalf("Decide = %s, %v", res.Status, err)
	}
	b := restarted(t, a)
	var got publications
	for _, d := range []time.Duration{0, effector.DefaultLease + time.Second} {
		b.advance(c, d)
		for _, e := range []*effector.Effector{a.eff, b.eff} {
			if n, err := e.ResumeDecided(ctx, got.publish); err != nil || n != 0 || got.len() != 0 {
				t.Fatalf("ResumeDecided after Decide = %d, %v, published %v; want nothing", n, err, &got)
			}
		}
	}
}

// TestAnOutcomeTheSinkKeepsRefusingDoesNotHoldUpTheOthers: a sink that
// refuses one outcome at every pass (too large for it, say) leaves the
// other approvals' outcomes published, each once, pass after pass.
func TestAnOutcomeTheSinkKeepsRefusingDoesNotHoldUpTheOthers(t *testing.T) {
	t.Parallel()
	a, _ := clockedApprovals(t)
	ctx := context.Background()
	var approvalIDs []string
	for seq := range int64(3) {
		in := a.stage(t, seq+1, fmt.Sprintf(`{"amount":900,"order_id":"o-%d"}`, seq))
		decideElsewhere(t, a, in.ID, effector.Approve)
		approvalIDs = append(approvalIDs, in.ID)
	}
	// The memory store lists records in id order: the refused one first.
	slices.Sort(approvalIDs)
	var ids []string
	for _, id := range approvalIDs {
		ids = append(ids, intent.ExecutionID(id))
	}
	refused := errors.New("result too large for the stream")
	var got publications
	poison := ids[0]
	sink := func(ctx context.Context, r intent.Result) error {
		if r.IntentID == poison {
			return refused
		}
		return got.publish(ctx, r)
	}
	for pass := range 3 {
		if _, err := a.eff.ResumeDecided(ctx, sink); !errors.Is(err, refused) {
			t.Fatalf("pass %d: %v, want the refusal", pass, err)
		}
	}
	count := map[string]int{}
	for _, r := range got.got {
		count[r.IntentID]++
	}
	if count[ids[1]] != 1 || count[ids[2]] != 1 || count[poison] != 0 {
		t.Fatalf("published %v; want each outcome but the refused one, once", &got)
	}
	if a.runs.Load() != 3 {
		t.Fatalf("%d runs of 3 approved calls", a.runs.Load())
	}
}

// TestTwoPassesOfOneEffectorRetryAFailedPublishOnce: the publication an
// effector holds after a failed publish is retried by its next pass; two of
// its passes at once must not both publish it.
func TestTwoPassesOfOneEffectorRetryAFailedPublishOnce(t *testing.T) {
	t.Parallel()
	a, _ := clockedApprovals(t)
	ctx := context.Background()
	in := a.stage(t, 1, `{"amount":900,"order_id":"o-1"}`)
	decideElsewhere(t, a, in.ID, effector.Approve)
	down := errors.New("results stream unavailable")
	if _, err := a.eff.ResumeDecided(ctx, func(context.Context, intent.Result) error { return down }); !errors.Is(err, down) {
		t.Fatalf("first pass: %v, want the sink's error", err)
	}
	var got publications
	slow := func(ctx context.Context, r intent.Result) error {
		time.Sleep(20 * time.Millisecond) // long enough for the other pass to reach its publish too
		return got.publish(ctx, r)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := a.eff.ResumeDecided(ctx, slow); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got.len() != 1 {
		t.Fatalf("published %v; want the outcome once", &got)
	}
}

// TestAPassCancelledWhilePublishingLeavesTheOutcomeToTheNext: the caller
// of ResumeDecided gives up while the sink takes an outcome (its context
// ends mid-publish). The call ran once; the next pass publishes the
// outcome, once, without running it again.
func TestAPassCancelledWhilePublishingLeavesTheOutcomeToTheNext(t *testing.T) {
	t.Parallel()
	a, _ := clockedApprovals(t)
	in := a.stage(t, 1, `{"amount":900,"order_id":"o-1"}`)
	decideElsewhere(t, a, in.ID, effector.Approve)
	ctx, cancel := context.WithCancel(context.Background())
	stuck := func(ctx context.Context, _ intent.Result) error {
		cancel() // the caller gives up while the sink holds the outcome
		<-ctx.Done()
		return ctx.Err()
	}
	if _, err := a.eff.ResumeDecided(ctx, stuck); !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled pass: %v, want context.Canceled", err)
	}
	var got publications
	for range 2 {
		if _, err := a.eff.ResumeDecided(context.Background(), got.publish); err != nil {
			t.Fatal(err)
		}
	}
	if want := fmt.Sprintf("[%s OK {\"refunded\":900}]", intent.ExecutionID(in.ID)); got.String() != want {
		t.Fatalf("published %v, want %s", &got, want)
	}
	if a.runs.Load() != 1 {
		t.Fatalf("the approved call ran %d times, want 1", a.runs.Load())
	}
}
