package effector_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// claimBatchDownStore fails the first ClaimBatch for every intent of the
// batch, as a store that is down does, and passes the rest through.
type claimBatchDownStore struct {
	effector.DedupStore
	failed atomic.Bool
}

func (s *claimBatchDownStore) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	if s.failed.CompareAndSwap(false, true) {
		for i := range out {
			out[i] = effector.ClaimOutcome{Err: errors.New("store down")}
		}
		return
	}
	s.DedupStore.ClaimBatch(ctx, reqs, out)
}

// TestServeRunsEachIntentOnceWhenTheBatchClaimFailsWhole: the store fails
// the ClaimBatch of a whole batch. Nothing of it is lost nor run twice: each
// intent takes Process's way, which claims it alone, and runs once, and its
// one result is published and acknowledged once.
func TestServeRunsEachIntentOnceWhenTheBatchClaimFailsWhole(t *testing.T) {
	t.Parallel()
	const n = 20
	store := &claimBatchDownStore{DedupStore: effector.NewMemoryStore()}
	e, calls := effectortest.Effector(t, store)
	src := newBatchSource(intents("down", n))
	sink := newResultSink()
	if err := effector.Serve(testCtx(t), src, sink, e, effector.WithWorkers(4), effector.WithServeLogger(quietLogger())); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if !store.failed.Load() {
		t.Fatal("no ClaimBatch reached the store: the test proves nothing")
	}
	for _, in := range intents("down", n) {
		if rs := sink.of(in.ID); len(rs) != 1 || rs[0].Status != intent.StatusOK || calls.Of(in.ID) != 1 || src.ackedOf(in.ID) != 1 {
			t.Errorf("intent %s: %d results, ran %d times, acked %d times; want one OK result, run once, acked once", in.ID, len(rs), calls.Of(in.ID), src.ackedOf(in.ID))
		}
	}
}

// TestServeRejectsAReplayInABatchThatAsksForAnotherCall: an intent id is
// recorded with one call; a batch then brings the same id asking for
// another (other arguments). Nothing runs again: its one result, REJECTED,
// is published once and its delivery acknowledged once, and the other
// intents of the batch run as usual.
func TestServeRejectsAReplayInABatchThatAsksForAnotherCall(t *testing.T) {
	t.Parallel()
	mem := effector.NewMemoryStore()
	e, calls := effectortest.Effector(t, mem)
	ins := intents("replay", 5)
	if res, err := e.Process(testCtx(t), ins[2]); err != nil || res.Status != intent.StatusOK {
		t.Fatalf("Process: %v, %v", res.Status, err)
	}
	other := *ins[2]
	other.ArgsJSON = []byte(`{"key":"someone-else"}`)
	batch := append([]*intent.Intent{}, ins...)
	batch[2] = &other
	src := newBatchSource(batch)
	sink := newResultSink()
	if err := effector.Serve(testCtx(t), src, sink, e, effector.WithWorkers(2), effector.WithServeLogger(quietLogger())); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if rs := sink.of(other.ID); len(rs) != 1 || rs[0].Status != intent.StatusRejected || calls.Of(other.ID) != 1 || src.ackedOf(other.ID) != 1 {
		t.Errorf("the replay asking for another call: %d results %v, ran %d times in all, acked %d times; want one REJECTED result, run once in all (by Process before), acked once", len(rs), statuses(rs), calls.Of(other.ID), src.ackedOf(other.ID))
	}
	for i, in := range ins {
		if i == 2 {
			continue
		}
		if rs := sink.of(in.ID); len(rs) != 1 || rs[0].Status != intent.StatusOK || calls.Of(in.ID) != 1 || src.ackedOf(in.ID) != 1 {
			t.Errorf("intent %s: %d results, ran %d times, acked %d times; want one OK result, run once, acked once", in.ID, len(rs), calls.Of(in.ID), src.ackedOf(in.ID))
		}
	}
}

// TestServeRunsAnIntentDeliveredTwiceInOneBatchOnce: one batch holds the
// same intent twice (a source that redelivered it before the first was
// acknowledged). It runs once; each delivery is answered with its one
// result and acknowledged.
func TestServeRunsAnIntentDeliveredTwiceInOneBatchOnce(t *testing.T) {
	t.Parallel()
	e, calls := effectortest.Effector(t, effector.NewMemoryStore())
	ins := intents("twice", 4)
	src := newBatchSource(append(ins, ins[1]))
	sink := newResultSink()
	if err := effector.Serve(testCtx(t), src, sink, e, effector.WithWorkers(4), effector.WithServeLogger(quietLogger())); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	for i, in := range ins {
		want := 1
		if i == 1 {
			want = 2
		}
		rs := sink.of(in.ID)
		if len(rs) != want || calls.Of(in.ID) != 1 || src.ackedOf(in.ID) != want {
			t.Errorf("intent %s, delivered %d times: %d results, ran %d times, acked %d times; want %d results, run once, acked %d times", in.ID, want, len(rs), calls.Of(in.ID), src.ackedOf(in.ID), want, want)
		}
		for _, r := range rs {
			if r.Status != intent.StatusOK || string(r.Payload) != string(rs[0].Payload) {
				t.Errorf("intent %s: results %v; want the same OK result for each delivery", in.ID, statuses(rs))
			}
		}
	}
}

// cancelingStore ends Serve's context while a ClaimBatch or a
// CompleteBatch is under way, and gives the shutdown time to reach Serve's
// work before the call goes on.
type cancelingStore struct {
	effector.DedupStore
	cancel             context.CancelFunc
	onClaim, onCompl   bool
	claimed, completed atomic.Bool
}

func (s *cancelingStore) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	if s.onClaim && s.claimed.CompareAndSwap(false, true) {
		s.cancel()
		time.Sleep(100 * time.Millisecond)
	}
	s.DedupStore.ClaimBatch(ctx, reqs, out)
}

func (s *cancelingStore) CompleteBatch(ctx context.Context, reqs []effector.Completion, errs []error) {
	if s.onCompl && s.completed.CompareAndSwap(false, true) {
		s.cancel()
		time.Sleep(100 * time.Millisecond)
	}
	s.DedupStore.CompleteBatch(ctx, reqs, errs)
}

// TestServeCancelledMidBatchLeavesNothingUnaccounted: Serve's caller
// cancels while a batch's claim, or a batch's completion, is in flight,
// with no drain time. Afterwards each intent is either done (its result
// durable in the store, run once, published and acknowledged once) or
// untouched (not run, not published, not acknowledged, and its claim
// released: the next owner claims it at once, without waiting for a
// lease). No intent is published or acknowledged without a durable result,
// and no claim is left held.
func TestServeCancelledMidBatchLeavesNothingUnaccounted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		onClaim, onCompl bool
	}{{"claim", true, false}, {"completion", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const n = 30
			mem := effector.NewMemoryStore()
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			store := &cancelingStore{DedupStore: mem, cancel: cancel, onClaim: tc.onClaim, onCompl: tc.onCompl}
			e, calls := effectortest.Effector(t, store, effector.WithLease(time.Minute))
			ins := intents("cancel-"+tc.name, n)
			src := newBatchSource(ins)
			sink := newResultSink()
			err := effector.Serve(ctx, src, sink, e, effector.WithWorkers(4), effector.WithDrainTimeout(0), effector.WithServeLogger(quietLogger()))
			if !store.claimed.Load() && !store.completed.Load() {
				t.Fatal("the store saw no batch call to cancel in: the test proves nothing")
			}
			var answered, untouched int
			for _, in := range ins {
				c, cerr := mem.Claim(context.Background(), in.ID, effector.CallOf(in), time.Minute)
				if cerr != nil {
					t.Fatalf("intent %s: Claim after Serve: %v", in.ID, cerr)
				}
				rs, ran, acked := sink.of(in.ID), calls.Of(in.ID), src.ackedOf(in.ID)
				switch {
				case ran > 1 || len(rs) > 1 || acked > 1:
					t.Errorf("intent %s: ran %d times, %d results, acked %d times; want each at most once", in.ID, ran, len(rs), acked)
				case (len(rs) > 0 || acked > 0) && c.State != effector.Done:
					t.Errorf("intent %s: %d results published, acked %d times, but the store says %v: a result was published or acknowledged before it was durable", in.ID, len(rs), acked, c.State)
				case c.State == effector.InFlight:
					t.Errorf("intent %s: its claim is still held after Serve returned (ran %d times): an unstarted claim was not released", in.ID, ran)
				case c.State == effector.Claimed && ran > 0:
					t.Errorf("intent %s: it ran, but the store holds no result for it", in.ID)
				case c.State == effector.Done:
					answered++
				default:
					untouched++
				}
			}
			if untouched > 0 && err == nil {
				t.Errorf("Serve returned nil with %d intents unanswered; want an *UnansweredError", untouched)
			}
			t.Logf("%d answered, %d left for redelivery; Serve: %v", answered, untouched, err)
		})
	}
}

func statuses(rs []intent.Result) []string {
	var ss []string
	for _, r := range rs {
		ss = append(ss, r.Status.String())
	}
	return ss
}

// oneAtATime hands out one delivery per ReceiveBatch, so that each is a
// batch of its own.
type oneAtATime struct{ *batchSource }

func (s oneAtATime) ReceiveBatch(ctx context.Context, _ int, buf []effector.Delivery) ([]effector.Delivery, error) {
	return s.batchSource.ReceiveBatch(ctx, 1, buf)
}

// laterClaimFirst holds the first ClaimBatch until the second has
// returned (or a second has passed): of two batches claimed at once, the
// later one's claim lands first.
type laterClaimFirst struct {
	effector.DedupStore
	n      atomic.Int32
	second chan struct{}
}

func (s *laterClaimFirst) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	switch s.n.Add(1) {
	case 1:
		select {
		case <-s.second:
		case <-time.After(time.Second):
		}
		s.DedupStore.ClaimBatch(ctx, reqs, out)
	case 2:
		s.DedupStore.ClaimBatch(ctx, reqs, out)
		close(s.second)
	default:
		s.DedupStore.ClaimBatch(ctx, reqs, out)
	}
}

// Two deliveries of one intent come in consecutive batches, whose claims
// are in flight at once, and the later batch's claim lands first. The
// earlier copy, found in flight, must not hold the only worker waiting for
// the later copy's claim to be answered, while the later copy waits for
// that worker behind it: both are answered, and the tool runs once.
// (ExampleServe hung so for ten minutes in a run under -race.)
func TestServeTwoCopiesClaimedInBatchesAtOnceDoNotWaitOnEachOther(t *testing.T) {
	t.Parallel()
	in := effectortest.Intent("twice", 1, 0)
	src := oneAtATime{newBatchSource([]*intent.Intent{in, in})}
	store := &laterClaimFirst{DedupStore: effector.NewMemoryStore(), second: make(chan struct{})}
	e, calls := effectortest.Effector(t, store)
	sink := newResultSink()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := effector.Serve(ctx, src, sink, e, effector.WithWorkers(1), effector.WithServeLogger(slog.New(slog.DiscardHandler))); err != nil {
		t.Fatalf("Serve: %v (the two copies waited on each other)", err)
	}
	if n := store.n.Load(); n < 1 {
		t.Fatalf("%d batch claims: the test claimed nothing in a batch", n)
	}
	if c := calls.Of(in.ID); c != 1 {
		t.Errorf("the tool ran %d times, want once", c)
	}
	if rs := sink.of(in.ID); len(rs) != 2 || rs[0].Status != intent.StatusOK || rs[1].Status != intent.StatusOK {
		t.Errorf("results %+v, want two OK results", rs)
	}
}
