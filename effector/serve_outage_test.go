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

// lateCompletions counts the completions a store refused with ErrNotOwner:
// written after their claim's lease ended.
type lateCompletions struct {
	effector.DedupStore
	late atomic.Int32
}

func (s *lateCompletions) CompleteBatch(ctx context.Context, reqs []effector.Completion, errs []error) {
	s.DedupStore.CompleteBatch(ctx, reqs, errs)
	for _, err := range errs {
		if errors.Is(err, effector.ErrNotOwner) {
			s.late.Add(1)
		}
	}
}

// The sink refuses one result for a while; the store is healthy. The
// completer published in its own goroutine, retrying the sink, so the
// completion of the next intent (its tool had run) waited behind it past
// its lease, and a second Serve given that intent ran it again. Completions
// are written while a publication is retried.
func TestASinkOutageDoesNotHoldCompletionsPastTheirLease(t *testing.T) {
	t.Parallel()
	mem := &lateCompletions{DedupStore: effector.NewMemoryStore()}
	opts := []effector.Option{effector.WithLease(400 * time.Millisecond), effector.WithTimeout(200 * time.Millisecond)}
	ins := intents("sink-outage", 2)
	p, x := ins[0], ins[1]
	refused := make(chan struct{}) // the sink refused p: x's tool ends only then
	var once sync.Once
	afterRefusal := func(ctx context.Context) error {
		if info, _ := effector.IntentFrom(ctx); info.ID == x.ID {
			<-refused
		}
		return nil
	}
	eA, callsA := effectortest.EffectorWithHooks(t, mem, []func(context.Context) error{afterRefusal}, opts...)
	eB, callsB := effectortest.Effector(t, mem, opts...)
	sinkA := newResultSink()
	until := time.Now().Add(1500 * time.Millisecond)
	sinkA.publish = func(r intent.Result) error {
		if r.IntentID == p.ID && time.Now().Before(until) {
			once.Do(func() { close(refused) })
			return errors.New("sink down")
		}
		return nil
	}
	var wg sync.WaitGroup
	var errB error
	wg.Go(func() {
		for callsA.Of(x.ID) == 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(600 * time.Millisecond) // past x's lease, had its completion waited
		errB = effector.Serve(testCtx(t), newBatchSource([]*intent.Intent{x}), newResultSink(), eB, effector.WithServeLogger(quietLogger()))
	})
	err := effector.Serve(testCtx(t), newBatchSource(ins), sinkA, eA, effector.WithRetryBackoff(20*time.Millisecond, 50*time.Millisecond), effector.WithServeLogger(quietLogger()))
	wg.Wait()
	if err != nil || errB != nil {
		t.Fatalf("Serve: %v; the second Serve: %v", err, errB)
	}
	if n := callsA.Of(x.ID) + callsB.Of(x.ID); n != 1 {
		t.Errorf("x ran %d times with a healthy store and no crash, want 1", n)
	}
	if n := mem.late.Load(); n != 0 {
		t.Errorf("%d completions were written after their lease ended", n)
	}
	if got := sinkA.of(p.ID); len(got) == 0 {
		t.Errorf("p's result was never published once the sink came back")
	}
}

// Acknowledgements fail for a while; the store and the sink are healthy.
// Results waiting for their acknowledgements held the completer, and
// hundreds of completions were written after their leases ended.
func TestAnAckOutageDoesNotHoldCompletionsPastTheirLease(t *testing.T) {
	t.Parallel()
	store := &lateCompletions{DedupStore: effector.NewMemoryStore()}
	e, calls := effectortest.Effector(t, store, effector.WithLease(400*time.Millisecond), effector.WithTimeout(200*time.Millisecond))
	ins := intents("ack-outage", 1300)
	src := newBatchSource(ins)
	until := time.Now().Add(1500 * time.Millisecond)
	src.ackErr = func() error {
		if time.Now().Before(until) {
			return errors.New("source down")
		}
		return nil
	}
	err := effector.Serve(testCtx(t), src, newResultSink(), e, effector.WithWorkers(8), effector.WithRetryBackoff(20*time.Millisecond, 50*time.Millisecond), effector.WithServeLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	if n := store.late.Load(); n != 0 {
		t.Errorf("%d completions were written after their lease ended, with a healthy store", n)
	}
	if calls.Total() != len(ins) {
		t.Errorf("the tools ran %d times for %d intents", calls.Total(), len(ins))
	}
}
