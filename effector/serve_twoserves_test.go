package effector_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// crossingStore is a store double for one of two Serves on one store: its
// first ClaimBatch answers refuse's item with an error (unclaimed), and
// runs before and after around the store's own call.
type crossingStore struct {
	effector.DedupStore
	refuse        string
	before, after func()
	calls         atomic.Int32
}

func (s *crossingStore) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	first := s.calls.Add(1) == 1
	if first && s.before != nil {
		s.before()
	}
	var keep []effector.ClaimRequest
	var at []int
	for i, r := range reqs {
		if first && r.IntentID == s.refuse {
			out[i] = effector.ClaimOutcome{Err: errors.New("injected: this row's claim failed")}
			continue
		}
		keep = append(keep, r)
		at = append(at, i)
	}
	o := make([]effector.ClaimOutcome, len(keep))
	s.DedupStore.ClaimBatch(ctx, keep, o)
	for k, i := range at {
		out[i] = o[k]
	}
	if first && s.after != nil {
		s.after()
	}
}

// slowFirstClaim delays its first ClaimBatch (a slow round trip).
type slowFirstClaim struct {
	effector.DedupStore
	delay time.Duration
	n     atomic.Int32
}

func (s *slowFirstClaim) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	if s.n.Add(1) == 1 {
		time.Sleep(s.delay)
	}
	s.DedupStore.ClaimBatch(ctx, reqs, out)
}

// serveBoth runs two Serves on one store to the end of their sources, and
// fails the test unless both answer every intent within 10 s (leases of
// 2 s) with each intent run once in all.
func serveBoth(t *testing.T, ins []*intent.Intent, storeA, storeB effector.DedupStore, srcA, srcB effector.Source, opts ...effector.ServeOption) {
	t.Helper()
	eA, callsA := effectortest.Effector(t, storeA, effector.WithLease(2*time.Second), effector.WithTimeout(time.Second))
	eB, callsB := effectortest.Effector(t, storeB, effector.WithLease(2*time.Second), effector.WithTimeout(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts = append([]effector.ServeOption{effector.WithDrainTimeout(100 * time.Millisecond), effector.WithServeLogger(quietLogger())}, opts...)
	sinkA, sinkB := newResultSink(), newResultSink()
	var errA, errB error
	var wg sync.WaitGroup
	wg.Go(func() { errA = effector.Serve(ctx, srcA, sinkA, eA, opts...) })
	wg.Go(func() { errB = effector.Serve(ctx, srcB, sinkB, eB, opts...) })
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("the two Serves did not both finish (each waited for a claim the other held behind its waiting worker): %v; %v", errA, errB)
	}
	for _, in := range ins {
		if n := callsA.Of(in.ID) + callsB.Of(in.ID); n != 1 {
			t.Errorf("intent %s ran %d times, want 1", in.ID, n)
		}
		if len(sinkA.of(in.ID)) == 0 || len(sinkB.of(in.ID)) == 0 {
			t.Errorf("intent %s: published by A %d times, by B %d times; want each Serve to answer it", in.ID, len(sinkA.of(in.ID)), len(sinkB.of(in.ID)))
		}
	}
}

// Two Serves (one worker each) get the same two intents in crossed order.
// A's claim of y fails and it claims x; B finds x in flight (A's) and
// claims y. Each worker took its batch's first intent and waited for the
// other Serve's claim, which sat in a queue behind that worker, its lease
// renewed: both waited for ever. An intent found in flight, or whose claim
// failed, now waits off the workers, which run what is claimed meanwhile.
func TestTwoServesWhoseClaimsCrossBothFinish(t *testing.T) {
	t.Parallel()
	mem := effector.NewMemoryStore()
	ins := intents("cross", 2)
	x, y := ins[0], ins[1]
	aClaimed, bClaimed := make(chan struct{}), make(chan struct{})
	storeA := &crossingStore{DedupStore: mem, refuse: y.ID, after: func() { close(aClaimed); <-bClaimed }}
	storeB := &crossingStore{DedupStore: mem, before: func() { <-aClaimed }, after: func() { close(bClaimed) }}
	serveBoth(t, ins, storeA, storeB, newBatchSource([]*intent.Intent{y, x}), newBatchSource([]*intent.Intent{x, y}))
}

// The same crossing from latency alone: each Serve claims two batches of
// one at once, and the slower first claims land crossed.
func TestTwoServesWhoseFirstClaimsAreSlowBothFinish(t *testing.T) {
	t.Parallel()
	for range 5 {
		mem := effector.NewMemoryStore()
		ins := intents("latency", 2)
		x, y := ins[0], ins[1]
		storeA := &slowFirstClaim{DedupStore: mem, delay: 100 * time.Millisecond}
		storeB := &slowFirstClaim{DedupStore: mem, delay: 50 * time.Millisecond}
		serveBoth(t, ins, storeA, storeB, oneAtATime{newBatchSource([]*intent.Intent{y, x})}, oneAtATime{newBatchSource([]*intent.Intent{x, y})}, effector.WithBatchSize(10))
	}
}

// The crossing with each Serve's batch claim failing for the intent the
// other claims: both wait for their claims off the workers too.
func TestTwoServesWhoseClaimsFailCrosswiseBothFinish(t *testing.T) {
	t.Parallel()
	mem := effector.NewMemoryStore()
	ins := intents("cross-failed", 2)
	x, y := ins[0], ins[1]
	aClaimed, bClaimed := make(chan struct{}), make(chan struct{})
	storeA := &crossingStore{DedupStore: mem, refuse: y.ID, after: func() { close(aClaimed); <-bClaimed }}
	storeB := &crossingStore{DedupStore: mem, refuse: x.ID, after: func() { close(bClaimed); <-aClaimed }}
	serveBoth(t, ins, storeA, storeB, newBatchSource([]*intent.Intent{y, x}), newBatchSource([]*intent.Intent{x, y}))
}
