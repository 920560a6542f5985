package effector_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// An intent another owner holds waits for its claim off the workers
// (awaitClaim). These are the ways that wait meets the rest of Serve.

// heldBy claims in in store for another owner, and returns its token.
func heldBy(t *testing.T, store effector.DedupStore, in *intent.Intent) string {
	t.Helper()
	c, err := store.Claim(context.Background(), in.ID, effector.CallOf(in), time.Minute)
	if err != nil || c.State != effector.Claimed {
		t.Fatalf("the other owner's claim: %+v, %v", c, err)
	}
	return c.Token
}

// plainSource is a Source that is no BatchSource: Serve's workers claim
// its intents one at a time.
type plainSource struct{ s *batchSource }

func (p plainSource) Receive(ctx context.Context) (effector.Delivery, error) { return p.s.Receive(ctx) }

// Two copies of an intent another owner holds, a batch apart, on one
// worker: the first waits aside, the second (claimed alone by its worker,
// after the first) found it in flight and waited in the worker, for the
// first's claim, queued behind that worker: neither was ever answered. Both
// are answered once the owner lets go, and the tool runs once.
func TestServeTwoCopiesOfAnIntentAnotherOwnerHoldsAreBothAnswered(t *testing.T) {
	t.Parallel()
	for range 5 {
		mem := effector.NewMemoryStore()
		x := intents("two-copies-held", 1)[0]
		token := heldBy(t, mem, x)
		e, calls := effectortest.Effector(t, mem, effector.WithLease(time.Second), effector.WithTimeout(200*time.Millisecond), effector.WithBackoff(time.Millisecond, 4*time.Millisecond))
		time.AfterFunc(200*time.Millisecond, func() { _ = mem.Release(context.Background(), x.ID, token) })
		sink := newResultSink()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := effector.Serve(ctx, oneAtATime{newBatchSource([]*intent.Intent{x, x})}, sink, e, effector.WithBatchSize(10),
			effector.WithDrainTimeout(100*time.Millisecond), effector.WithServeLogger(quietLogger()))
		cancel()
		if err != nil || calls.Of(x.ID) != 1 || len(sink.of(x.ID)) != 2 {
			t.Fatalf("Serve: %v; the tool ran %d times, %d results published; want nil, 1, 2", err, calls.Of(x.ID), len(sink.of(x.ID)))
		}
	}
}

// An intent expires while another owner holds it, and that owner then
// finishes it: the published result is the owner's, the one the store
// holds, not an EXPIRED that nothing stored (the wait handed it to
// Process's way, which answered EXPIRED without asking the store).
func TestAnIntentThatExpiresWhileAnotherOwnerHoldsItIsAnsweredWithThatOwnersResult(t *testing.T) {
	t.Parallel()
	mem := effector.NewMemoryStore()
	x := intents("expires-held", 1)[0]
	x.ExpiresAtMs = time.Now().Add(300 * time.Millisecond).UnixMilli()
	token := heldBy(t, mem, x)
	e, _ := effectortest.Effector(t, mem, effector.WithBackoff(time.Millisecond, 20*time.Millisecond))
	ok := intent.Result{IntentID: x.ID, EntityKey: x.EntityKey, Seq: x.Seq, Status: intent.StatusOK, Payload: []byte(`"the other owner's"`), CompletedAtMs: 1}
	b, err := ok.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(500*time.Millisecond, func() { _ = mem.Complete(context.Background(), x.ID, token, b, time.Hour) })
	sink := newResultSink()
	if err := effector.Serve(testCtx(t), newBatchSource([]*intent.Intent{x}), sink, e, effector.WithServeLogger(quietLogger())); err != nil {
		t.Fatal(err)
	}
	if rs := sink.of(x.ID); len(rs) != 1 || rs[0].Status != intent.StatusOK || string(rs[0].Payload) != `"the other owner's"` {
		t.Errorf("published %v, want the other owner's OK, which the store holds", rs)
	}
}

// failingClaim fails every single Claim of one intent id.
type failingClaim struct {
	effector.DedupStore
	id     string
	claims atomic.Int32
}

func (s *failingClaim) Claim(ctx context.Context, id string, call effector.Call, lease time.Duration) (effector.Claim, error) {
	if id == s.id {
		s.claims.Add(1)
		return effector.Claim{}, errors.New("injected: the claim failed")
	}
	return s.DedupStore.Claim(ctx, id, call, lease)
}

// An intent another owner holds, delivered past WithMaxAttempts, whose
// claims alone keep failing: it is given up (one ERROR published), from a
// BatchSource and from a plain Source, whose worker claimed it again and
// again (a plain Source's worker claims what it takes from the workers'
// queue, and took the intent back from the wait for another claim).
func TestAnIntentWhoseClaimKeepsFailingPastMaxAttemptsIsGivenUp(t *testing.T) {
	t.Parallel()
	for _, plain := range []bool{false, true} {
		mem := effector.NewMemoryStore()
		x := intents("claim-fails", 1)[0]
		heldBy(t, mem, x)
		store := &failingClaim{DedupStore: mem, id: x.ID}
		e, calls := effectortest.Effector(t, store, effector.WithMaxAttempts(3))
		bs := &batchSource{acked: map[string]int{}}
		bs.add(effector.Delivery{Intent: x, Pos: "x", Deliveries: 5})
		var src effector.Source = bs
		if plain {
			src = plainSource{bs}
		}
		sink := newResultSink()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := effector.Serve(ctx, src, sink, e, effector.WithDrainTimeout(50*time.Millisecond), effector.WithServeLogger(quietLogger()))
		cancel()
		if rs := sink.of(x.ID); err != nil || len(rs) != 1 || rs[0].Status != intent.StatusError || calls.Of(x.ID) != 0 {
			t.Errorf("plain source %v: Serve: %v; published %v; the tool ran %d times; want one ERROR, given up, nothing run", plain, err, rs, calls.Of(x.ID))
		}
	}
}

// unreadableDone answers every claim of one id with a result that does not
// decode.
type unreadableDone struct {
	effector.DedupStore
	id string
}

func (s *unreadableDone) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	s.DedupStore.ClaimBatch(ctx, reqs, out)
	for i, r := range reqs {
		if r.IntentID == s.id {
			out[i] = effector.ClaimOutcome{Claim: effector.Claim{State: effector.Done, Result: []byte("garbage")}}
		}
	}
}

func (s *unreadableDone) Claim(ctx context.Context, id string, call effector.Call, lease time.Duration) (effector.Claim, error) {
	if id == s.id {
		return effector.Claim{State: effector.Done, Result: []byte("garbage")}, nil
	}
	return s.DedupStore.Claim(ctx, id, call, lease)
}

// A stored result that does not decode is not another owner's claim to
// wait for: it takes Process's way, which reports it, and a shutdown ends
// it at once rather than after the drain timeout.
func TestAStoredResultThatCannotBeReadIsNotWaitedFor(t *testing.T) {
	t.Parallel()
	x := intents("unreadable", 1)[0]
	e, _ := effectortest.Effector(t, &unreadableDone{DedupStore: effector.NewMemoryStore(), id: x.ID})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_ = effector.Serve(ctx, newBatchSource([]*intent.Intent{x}), newResultSink(), e, effector.WithDrainTimeout(3*time.Second), effector.WithServeLogger(quietLogger()))
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Serve returned after %v (its context ended at 300ms): it waited for an owner no one is", d)
	}
}

// A claim that keeps failing is retried until Serve's context ends, not
// through the drain timeout: the drain is for work in flight, and nothing
// of this intent is. It kept Serve for the whole drain.
func TestAFailingClaimStopsWithServe(t *testing.T) {
	t.Parallel()
	for _, plain := range []bool{false, true} {
		x := intents("claim-down", 1)[0]
		e, _ := effectortest.Effector(t, downStore{effector.NewMemoryStore()})
		var src effector.Source = newBatchSource([]*intent.Intent{x})
		if plain {
			src = plainSource{newBatchSource([]*intent.Intent{x})}
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		err := effector.Serve(ctx, src, newResultSink(), e, effector.WithDrainTimeout(5*time.Second), effector.WithServeLogger(quietLogger()))
		var ue *effector.UnansweredError
		if d := time.Since(start); d > 2*time.Second || !errors.As(err, &ue) {
			t.Errorf("plain source %v: Serve returned %v after %v (its context ended at 200ms, drain 5s); want the intent left unanswered at once", plain, err, d)
		}
	}
}

// A redelivered copy right behind its first, which expires while the first
// runs: the first's OK, which the store holds, answers it too, not an
// EXPIRED nothing stored (its expiry was checked before its claim).
func TestARedeliveredCopyThatExpiredIsAnsweredWithTheStoredResult(t *testing.T) {
	t.Parallel()
	mem := effector.NewMemoryStore()
	x := intents("copy-expired", 1)[0]
	x.ExpiresAtMs = time.Now().Add(300 * time.Millisecond).UnixMilli()
	slow := func(context.Context) error { time.Sleep(600 * time.Millisecond); return nil }
	e, calls := effectortest.EffectorWithHooks(t, mem, []func(context.Context) error{slow}, effector.WithLease(2*time.Second), effector.WithTimeout(time.Second))
	sink := newResultSink()
	if err := effector.Serve(testCtx(t), oneAtATime{newBatchSource([]*intent.Intent{x, x})}, sink, e, effector.WithBatchSize(10), effector.WithServeLogger(quietLogger())); err != nil {
		t.Fatal(err)
	}
	rs := sink.of(x.ID)
	if calls.Of(x.ID) != 1 || len(rs) != 2 || rs[0].Status != intent.StatusOK || rs[1].Status != intent.StatusOK {
		t.Errorf("the tool ran %d times; published %v; want once, and OK for both copies", calls.Of(x.ID), rs)
	}
}

// slowFirstRelease makes its first ReleaseBatch (a lease renewal's release)
// a round trip slower before the renewal's claim can follow.
type slowFirstRelease struct {
	effector.DedupStore
	n atomic.Int32
}

func (s *slowFirstRelease) ReleaseBatch(ctx context.Context, reqs []effector.Release, errs []error) {
	s.DedupStore.ReleaseBatch(ctx, reqs, errs)
	if s.n.Add(1) == 1 {
		time.Sleep(20 * time.Millisecond)
	}
}

// A claimed copy waiting for the worker has its lease renewed (released,
// then claimed again); the other copy, waiting aside, claims the intent in
// between. The renewal fails, and the first copy waited for the second in
// the only worker, on Process's way, while the second sat behind it in the
// queue, its lease renewed: neither was answered. A failed renewal now
// waits for its claim aside too.
func TestACopyWhoseRenewalLostTheClaimWaitsAside(t *testing.T) {
	t.Parallel()
	mem := effector.NewMemoryStore()
	ins := intents("renewal-lost", 2)
	x, y := ins[0], ins[1]
	token := heldBy(t, mem, x)
	time.AfterFunc(50*time.Millisecond, func() { _ = mem.Release(context.Background(), x.ID, token) })
	slowY := func(ctx context.Context) error {
		if info, _ := effector.IntentFrom(ctx); info.ID == y.ID {
			time.Sleep(600 * time.Millisecond) // x's copies wait behind y, and their leases are renewed
		}
		return nil
	}
	e, calls := effectortest.EffectorWithHooks(t, &slowFirstRelease{DedupStore: mem}, []func(context.Context) error{slowY},
		effector.WithLease(time.Second), effector.WithTimeout(700*time.Millisecond), effector.WithBackoff(time.Millisecond, 4*time.Millisecond))
	sink := newResultSink()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	err := effector.Serve(ctx, newBatchSource([]*intent.Intent{x, x, y}), sink, e, effector.WithDrainTimeout(100*time.Millisecond), effector.WithServeLogger(quietLogger()))
	if err != nil || len(sink.of(x.ID)) != 2 || calls.Of(x.ID) != 1 {
		t.Errorf("Serve: %v; x's copies answered %d times, x ran %d times; want nil, 2, 1", err, len(sink.of(x.ID)), calls.Of(x.ID))
	}
}

// With entity order, an intent whose earlier owner crashed mid-tool is
// claimed Reclaimed and queued behind its entity's first intent, which
// waits for another owner; Serve stops. The queued intent's claim was
// released, so the store forgot that its effect is unknown, and its
// redelivery ran it with no note. It is left to lapse instead.
func TestADroppedReclaimedIntentStaysUnknown(t *testing.T) {
	t.Parallel()
	mem := effector.NewMemoryStore()
	ins := intents("dropped-reclaimed", 2)
	x1, x2 := ins[0], ins[1]
	heldBy(t, mem, x1)
	if _, err := mem.Claim(context.Background(), x2.ID, effector.CallOf(x2), 10*time.Millisecond); err != nil { // an owner that crashed
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	opts := []effector.Option{effector.WithLease(time.Second), effector.WithTimeout(500 * time.Millisecond), effector.WithBackoff(time.Millisecond, 5*time.Millisecond)}
	e, _ := effectortest.Effector(t, mem, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_ = effector.Serve(ctx, newBatchSource(ins), newResultSink(), e, effector.WithEntityOrder(true), effector.WithDrainTimeout(100*time.Millisecond), effector.WithServeLogger(quietLogger()))
	e2, calls := effectortest.Effector(t, mem, opts...)
	sink := newResultSink()
	if err := effector.Serve(testCtx(t), newBatchSource([]*intent.Intent{x2}), sink, e2, effector.WithServeLogger(quietLogger())); err != nil {
		t.Fatal(err)
	}
	if rs := sink.of(x2.ID); calls.Of(x2.ID) != 1 || len(rs) != 1 || rs[0].Status != intent.StatusOK || !strings.HasPrefix(rs[0].ErrorMessage, "effect unknown") {
		t.Errorf("the redelivery ran x2 %d times and published %v; want once, OK marked effect unknown (its earlier owner crashed mid-tool)", calls.Of(x2.ID), rs)
	}
}
