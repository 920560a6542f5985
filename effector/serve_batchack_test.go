package effector_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// batchAcker is a BatchAcker over a batchSource's deliveries: it records
// the deliveries each AckBatch call acknowledges, and fails a call while
// fail returns an error.
type batchAcker struct {
	mu      sync.Mutex
	calls   int
	failed  int
	inBatch map[string]int // by intent id, acknowledged in a batch
	fail    func() error
}

func (a *batchAcker) AckBatch(_ context.Context, ds []effector.Delivery) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail != nil {
		if err := a.fail(); err != nil {
			a.failed++
			return err
		}
	}
	a.calls++
	for _, d := range ds {
		if d.Acker != a {
			return errors.New("batchAcker: given a delivery of another acker")
		}
		a.inBatch[d.Intent.ID]++
	}
	return nil
}

func (a *batchAcker) stats() (calls, failed int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls, a.failed
}

func (a *batchAcker) of(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.inBatch[id]
}

// newBatchAckSource is a batchSource whose deliveries have a as their Acker.
func newBatchAckSource(ins []*intent.Intent, a *batchAcker) *batchSource {
	s := newBatchSource(ins)
	for i := range s.ds {
		s.ds[i].Acker = a
	}
	return s
}

// One Serve over n deliveries of a source with a BatchAcker acknowledges
// them all in far fewer AckBatch calls than n, and calls no delivery's own
// Ack. The sink holds every result until all n are being published, and the
// first AckBatch waits until all n are published, so the rest gather behind
// it as they do under load (without that wait, a loaded machine's scheduler
// decides how they gather, and the count with it).
func TestServeAcknowledgesDeliveriesInBatches(t *testing.T) {
	t.Parallel()
	const n = 100
	ins := intents("batchack", n)
	sink := newResultSink()
	var gate sync.Once
	a := &batchAcker{inBatch: map[string]int{}, fail: func() error {
		// The first call waits until every result is kept, and a moment
		// more for the goroutines that published them to hand them on (a
		// loaded CI machine, under -race, let 26 batches through when it
		// waited for less).
		gate.Do(func() {
			for sink.count() < n {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond)
		})
		return nil
	}}
	src := newBatchAckSource(ins, a)
	e, calls := effectortest.Effector(t, effector.NewMemoryStore())
	var mu sync.Mutex
	started, all := 0, make(chan struct{})
	sink.publish = func(intent.Result) error {
		mu.Lock()
		if started++; started == n {
			close(all)
		}
		mu.Unlock()
		<-all
		return nil
	}
	if err := effector.Serve(context.Background(), src, sink, e, effector.WithWorkers(4), effector.WithServeLogger(slog.New(slog.DiscardHandler))); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	for _, in := range ins {
		if got := a.of(in.ID); got != 1 {
			t.Errorf("intent %s acknowledged %d times in batches, want once", in.ID, got)
		}
		if got := src.ackedOf(in.ID); got != 0 {
			t.Errorf("intent %s acknowledged %d times through its own Ack, want none (its Acker takes it)", in.ID, got)
		}
		if got := len(sink.of(in.ID)); got != 1 {
			t.Errorf("intent %s has %d results, want 1", in.ID, got)
		}
	}
	if calls.Total() != n {
		t.Errorf("the tool ran %d times for %d intents", calls.Total(), n)
	}
	if got, _ := a.stats(); got > n/5 {
		t.Errorf("%d AckBatch calls for %d deliveries, want far fewer (at most %d)", got, n, n/5)
	}
}

// An AckBatch that fails leaves its deliveries to their own Ack: each is
// then acknowledged through Ack and answered once, its result published
// once, whether every batch fails or only the first ones do.
func TestServeAckBatchThatFailsFallsBackToEachAck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		failures int // AckBatch calls that fail; -1: all
	}{
		{"when every batch fails", -1},
		{"when the first two batches fail", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const n = 40
			ins := intents("batchack-fail-"+tc.name, n)
			a := &batchAcker{inBatch: map[string]int{}}
			failures := tc.failures
			a.fail = func() error {
				if failures == 0 {
					return nil
				}
				failures--
				return errors.New("connection lost mid-batch")
			}
			src := newBatchAckSource(ins, a)
			e, calls := effectortest.Effector(t, effector.NewMemoryStore())
			sink := newResultSink()
			if err := effector.Serve(context.Background(), src, sink, e, effector.WithWorkers(4),
				effector.WithRetryBackoff(time.Millisecond, 10*time.Millisecond), effector.WithServeLogger(slog.New(slog.DiscardHandler))); err != nil {
				t.Fatalf("Serve: %v", err)
			}
			_, failed := a.stats()
			if failed == 0 {
				t.Fatal("no AckBatch failed: the test proves nothing")
			}
			alone := 0
			for _, in := range ins {
				batch, own := a.of(in.ID), src.ackedOf(in.ID)
				if batch+own != 1 {
					t.Errorf("intent %s acknowledged %d times in batches and %d through its Ack, want once in all", in.ID, batch, own)
				}
				alone += own
				if got := len(sink.of(in.ID)); got != 1 {
					t.Errorf("intent %s has %d results, want 1", in.ID, got)
				}
			}
			if alone == 0 {
				t.Error("no delivery of a failed batch was acknowledged through its own Ack")
			}
			if tc.failures < 0 && alone != n {
				t.Errorf("%d of %d deliveries acknowledged through their Ack with every batch failing", alone, n)
			}
			if calls.Total() != n {
				t.Errorf("the tool ran %d times for %d intents", calls.Total(), n)
			}
		})
	}
}

// Deliveries with no Acker (a wrapper cleared it) are acknowledged through
// their own Ack, beside deliveries of the same Serve that have one.
func TestServeMixesDeliveriesWithAndWithoutAnAcker(t *testing.T) {
	t.Parallel()
	const n = 30
	ins := intents("batchack-mixed", n)
	a := &batchAcker{inBatch: map[string]int{}}
	src := newBatchAckSource(ins, a)
	for i := range src.ds {
		if i%3 == 0 {
			src.ds[i].Acker = nil
		}
	}
	e, _ := effectortest.Effector(t, effector.NewMemoryStore())
	if err := effector.Serve(context.Background(), src, newResultSink(), e, effector.WithWorkers(4), effector.WithServeLogger(slog.New(slog.DiscardHandler))); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	for i, in := range ins {
		batch, own := a.of(in.ID), src.ackedOf(in.ID)
		if want := i%3 == 0; (own == 1 && batch == 0) != want || (own == 0 && batch == 1) == want {
			t.Errorf("intent %d (Acker set: %v) acknowledged %d times in batches and %d through its Ack", i, i%3 != 0, batch, own)
		}
	}
}

// A source that sets an Acker and no Ack has the deliveries of a failed
// batch acknowledged one by one through AckBatch, never counted answered
// unacknowledged.
func TestServeFallsBackToBatchesOfOneWhenTheSourceSetsNoAck(t *testing.T) {
	t.Parallel()
	const n = 30
	ins := intents("batchack-noack", n)
	a := &batchAcker{inBatch: map[string]int{}}
	failures := 1
	a.fail = func() error {
		if failures == 0 {
			return nil
		}
		failures--
		return errors.New("connection lost mid-batch")
	}
	src := newBatchAckSource(ins, a)
	for i := range src.ds {
		src.ds[i].Ack = nil
	}
	e, _ := effectortest.Effector(t, effector.NewMemoryStore())
	if err := effector.Serve(context.Background(), src, newResultSink(), e, effector.WithWorkers(4),
		effector.WithRetryBackoff(time.Millisecond, 10*time.Millisecond), effector.WithServeLogger(slog.New(slog.DiscardHandler))); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, failed := a.stats(); failed == 0 {
		t.Fatal("no AckBatch failed: the test proves nothing")
	}
	for _, in := range ins {
		if got := a.of(in.ID); got != 1 {
			t.Errorf("intent %s acknowledged %d times through AckBatch, want once", in.ID, got)
		}
	}
}
