package effector_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// timeline records when each intent's tool started and when its
// completion became durable.
type timeline struct {
	mu      sync.Mutex
	started map[string][]time.Time
	durable map[string]time.Time
}

func (tl *timeline) start(id string) {
	tl.mu.Lock()
	tl.started[id] = append(tl.started[id], time.Now())
	tl.mu.Unlock()
}

func (tl *timeline) startedOf(id string) []time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return append([]time.Time(nil), tl.started[id]...)
}

// durableStore notes when each completion is durable.
type durableStore struct {
	effector.DedupStore
	tl *timeline
}

func (s *durableStore) note(id string, err error) {
	if err == nil {
		s.tl.mu.Lock()
		if _, ok := s.tl.durable[id]; !ok {
			s.tl.durable[id] = time.Now()
		}
		s.tl.mu.Unlock()
	}
}

func (s *durableStore) Complete(ctx context.Context, id, token string, res []byte, ttl time.Duration) error {
	err := s.DedupStore.Complete(ctx, id, token, res, ttl)
	s.note(id, err)
	return err
}

func (s *durableStore) CompleteBatch(ctx context.Context, reqs []effector.Completion, errs []error) {
	s.DedupStore.CompleteBatch(ctx, reqs, errs)
	for i, r := range reqs {
		s.note(r.IntentID, errs[i])
	}
}

// TestServeWithEntityOrderRunsALaterIntentOnlyAfterTheEarlierIsDurable: an
// entity's slow first intent (seq 1) and fast second (seq 2), delivered
// second first, with another entity's slow intent beside them, on four
// workers. The first Serve stops (drain 50ms) while the slow intents run:
// the second intent must not have started, and is left for redelivery. The
// restarted Serve, given what was not acknowledged, runs the second intent
// only after the first's result is durable; the other entity ran beside the
// first, in parallel. Without WithEntityOrder the fast second intent runs
// at once, before the slow first ends (the control).
func TestServeWithEntityOrderRunsALaterIntentOnlyAfterTheEarlierIsDurable(t *testing.T) {
	t.Parallel()
	first := effectortest.Intent("order-a", 1, 0)
	second := effectortest.Intent("order-a", 2, 0)
	other := effectortest.Intent("order-b", 1, 0)
	effectorOn := func(t *testing.T, tl *timeline, mem *effector.MemoryStore) (*effector.Effector, chan struct{}) {
		slowRunning := make(chan struct{}, 2)
		e, _ := effectortest.EffectorWithHooks(t, &durableStore{DedupStore: mem, tl: tl}, []func(context.Context) error{
			func(ctx context.Context) error {
				info, _ := effector.IntentFrom(ctx)
				tl.start(info.ID)
				if info.ID != second.ID {
					slowRunning <- struct{}{}
					time.Sleep(400 * time.Millisecond)
				}
				return nil
			},
		}, effector.WithLease(5*time.Second), effector.WithTimeout(2*time.Second))
		return e, slowRunning
	}
	setup := func(t *testing.T) (*effector.Effector, *timeline, *effector.MemoryStore, chan struct{}) {
		tl := &timeline{started: map[string][]time.Time{}, durable: map[string]time.Time{}}
		mem := effector.NewMemoryStore()
		e, slowRunning := effectorOn(t, tl, mem)
		return e, tl, mem, slowRunning
	}
	deliveries := []*intent.Intent{second, first, other}

	t.Run("across a restart", func(t *testing.T) {
		t.Parallel()
		e, tl, mem, slowRunning := setup(t)
		src := newBatchSource(deliveries)
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() {
			served <- effector.Serve(ctx, src, newResultSink(), e, effector.WithWorkers(4), effector.WithEntityOrder(true),
				effector.WithDrainTimeout(50*time.Millisecond), effector.WithServeLogger(quietLogger()))
		}()
		<-slowRunning
		<-slowRunning // both slow intents run at once: their entities differ
		cancel()
		var ue *effector.UnansweredError
		if err := <-served; !errors.As(err, &ue) {
			t.Fatalf("the first Serve = %v, want an *UnansweredError (it stopped mid-tool)", err)
		}
		if got := tl.startedOf(second.ID); len(got) != 0 {
			t.Fatalf("the second intent started while the first ran")
		}
		var left []*intent.Intent
		for _, in := range deliveries {
			if src.ackedOf(in.ID) == 0 {
				left = append(left, in)
			}
		}
		// The restart: the slow intents are done, or still running
		// detached in the first effector; the second runs now, once.
		e2, _ := effectorOn(t, tl, mem)
		sink := newResultSink()
		if err := effector.Serve(testCtx(t), newBatchSource(left), sink, e2, effector.WithWorkers(4), effector.WithEntityOrder(true),
			effector.WithServeLogger(quietLogger())); err != nil {
			t.Fatalf("the restarted Serve: %v", err)
		}
		tl.mu.Lock()
		firstDone, ok := tl.durable[first.ID]
		starts := tl.started[second.ID]
		tl.mu.Unlock()
		if rs := sink.of(second.ID); !ok || len(rs) != 1 || rs[0].Status != intent.StatusOK || len(starts) != 1 {
			t.Fatalf("after the restart: first durable %v, second's results %v, started %d times; want both done, the second run once", ok, rs, len(starts))
		}
		if starts[0].Before(firstDone) {
			t.Errorf("the second intent started %v before the first's result was durable", firstDone.Sub(starts[0]))
		}
	})

	t.Run("in one run, and without the option", func(t *testing.T) {
		t.Parallel()
		for _, on := range []bool{true, false} {
			e, tl, _, _ := setup(t)
			if err := effector.Serve(testCtx(t), newBatchSource(deliveries), newResultSink(), e, effector.WithWorkers(4),
				effector.WithEntityOrder(on), effector.WithServeLogger(quietLogger())); err != nil {
				t.Fatalf("Serve: %v", err)
			}
			tl.mu.Lock()
			secondStart, firstDone, otherStart, firstStart := tl.started[second.ID][0], tl.durable[first.ID], tl.started[other.ID][0], tl.started[first.ID][0]
			tl.mu.Unlock()
			if on && secondStart.Before(firstDone) {
				t.Errorf("WithEntityOrder: the second intent started %v before the first's result was durable", firstDone.Sub(secondStart))
			}
			if on && otherStart.Sub(firstStart).Abs() > 300*time.Millisecond {
				t.Errorf("WithEntityOrder: the other entity's intent started %v apart from the first: not in parallel", otherStart.Sub(firstStart))
			}
			if !on && !secondStart.Before(firstDone) {
				t.Errorf("without WithEntityOrder the fast second intent waited for the slow first (the control failed)")
			}
		}
	})
}
