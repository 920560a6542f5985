package effector_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// errKilled is what everything answers once the process is cut.
var errKilled = errors.New("the process was killed")

// cutPoint is a kill simulated in-process: once it falls, the store, the
// sink and the acknowledgements answer nothing but errKilled, and no tool
// applies its effect, as in a process that is gone.
type cutPoint struct {
	dead   atomic.Bool
	fallen chan struct{}
	once   sync.Once
}

func (c *cutPoint) fall() { c.once.Do(func() { c.dead.Store(true); close(c.fallen) }) }

// cutStore is the store as seen by the process cut at `at`.
type cutStore struct {
	effector.DedupStore
	cut *cutPoint
	at  string // "claimed", "completing", "completed"; "running" falls in the tool

	mu      sync.Mutex
	durable map[string]bool
}

func (s *cutStore) Claim(ctx context.Context, id string, call effector.Call, lease time.Duration) (effector.Claim, error) {
	if s.cut.dead.Load() {
		return effector.Claim{}, errKilled
	}
	return s.DedupStore.Claim(ctx, id, call, lease)
}

func (s *cutStore) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	if s.cut.dead.Load() {
		for i := range out {
			out[i].Err = errKilled
		}
		return
	}
	s.DedupStore.ClaimBatch(ctx, reqs, out)
	if s.at == "claimed" {
		s.cut.fall()
	}
}

func (s *cutStore) Complete(ctx context.Context, id, token string, res []byte, ttl time.Duration) error {
	errs := make([]error, 1)
	s.CompleteBatch(ctx, []effector.Completion{{IntentID: id, Token: token, Result: res, TTL: ttl}}, errs)
	return errs[0]
}

func (s *cutStore) CompleteBatch(ctx context.Context, reqs []effector.Completion, errs []error) {
	if s.at == "completing" {
		s.cut.fall()
	}
	if s.cut.dead.Load() {
		for i := range errs {
			errs[i] = errKilled
		}
		return
	}
	s.DedupStore.CompleteBatch(ctx, reqs, errs)
	s.mu.Lock()
	for i, r := range reqs {
		if errs[i] == nil {
			s.durable[r.IntentID] = true
		}
	}
	s.mu.Unlock()
	if s.at == "completed" {
		s.cut.fall()
	}
}

func (s *cutStore) Release(ctx context.Context, id, token string) error {
	if s.cut.dead.Load() {
		return errKilled
	}
	return s.DedupStore.Release(ctx, id, token)
}

func (s *cutStore) ReleaseBatch(ctx context.Context, reqs []effector.Release, errs []error) {
	if s.cut.dead.Load() {
		for i := range errs {
			errs[i] = errKilled
		}
		return
	}
	s.DedupStore.ReleaseBatch(ctx, reqs, errs)
}

// effects counts the tool's effects by intent id, per run.
type effects struct {
	mu sync.Mutex
	n  [2]map[string]int
}

// TestServeKilledAtEachPointOfABatchLosesNothing kills Serve at each point
// of a batch's path: after the batch's claim and before any tool runs;
// while its tools run; after they ran and before the batch's completion;
// after the completion and before the acknowledgement. A restarted Serve
// on the same store, given the deliveries left unacknowledged, answers
// every intent (0 lost). A tool runs twice only where the kill fell between
// its run and its durable completion, and the second run's result says
// "effect unknown".
func TestServeKilledAtEachPointOfABatchLosesNothing(t *testing.T) {
	t.Parallel()
	for _, at := range []string{"claimed", "running", "completing", "completed"} {
		t.Run("killed "+at, func(t *testing.T) {
			t.Parallel()
			const n = 12
			ins := intents("kill-"+at, n)
			var clock atomic.Int64
			clock.Store(time.Now().UnixMilli())
			mem := effector.NewMemoryStore(effector.WithStoreClock(func() time.Time { return time.UnixMilli(clock.Load()) }))
			cut := &cutPoint{fallen: make(chan struct{})}
			store := &cutStore{DedupStore: mem, cut: cut, at: at, durable: map[string]bool{}}
			fx := &effects{n: [2]map[string]int{{}, {}}}
			var run atomic.Int32
			tool := func(ctx context.Context) error {
				info, _ := effector.IntentFrom(ctx)
				r := run.Load()
				if r == 0 && cut.dead.Load() {
					return errKilled // nothing runs in a killed process
				}
				fx.mu.Lock()
				fx.n[r][info.ID]++
				ran := len(fx.n[r])
				fx.mu.Unlock()
				if r == 0 && at == "running" && ran == 3 {
					cut.fall()
				}
				return nil
			}
			opts := []effector.Option{effector.WithLease(time.Second), effector.WithTimeout(200 * time.Millisecond),
				effector.WithStoreTimeout(100 * time.Millisecond), effector.WithBackoff(5*time.Millisecond, 20*time.Millisecond)}
			e1, _ := effectortest.EffectorWithHooks(t, store, []func(context.Context) error{tool}, opts...)
			src1 := newBatchSource(ins)
			src1.ackErr = func() error {
				if cut.dead.Load() {
					return errKilled
				}
				return nil
			}
			sink1 := newResultSink()
			sink1.publish = func(intent.Result) error {
				if cut.dead.Load() {
					return errKilled
				}
				return nil
			}
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-cut.fallen; cancel() }()
			err := effector.Serve(ctx, src1, sink1, e1, effector.WithWorkers(4), effector.WithServeLogger(quietLogger()),
				effector.WithDrainTimeout(100*time.Millisecond), effector.WithRetryBackoff(5*time.Millisecond, 20*time.Millisecond))
			cancel()
			if !cut.dead.Load() {
				t.Fatalf("the kill never fell (Serve = %v)", err)
			}

			// The restart: the dead process's leases have run out.
			clock.Add((2 * time.Second).Milliseconds())
			run.Store(1)
			e2, _ := effectortest.EffectorWithHooks(t, mem, []func(context.Context) error{tool}, opts...)
			var left []*intent.Intent
			for _, in := range ins {
				if src1.ackedOf(in.ID) == 0 {
					left = append(left, in)
				}
			}
			sink2 := newResultSink()
			if err := effector.Serve(testCtx(t), newBatchSource(left), sink2, e2, effector.WithWorkers(4), effector.WithServeLogger(quietLogger())); err != nil {
				t.Fatalf("restarted Serve: %v", err)
			}
			dups := 0
			fx.mu.Lock()
			defer fx.mu.Unlock()
			store.mu.Lock()
			defer store.mu.Unlock()
			for i, in := range ins {
				ran1, ran2 := fx.n[0][in.ID], fx.n[1][in.ID]
				results := append(sink1.of(in.ID), sink2.of(in.ID)...)
				if len(results) == 0 {
					t.Errorf("intent %d is lost: no result in either run", i)
					continue
				}
				if ran1+ran2 == 0 || ran1 > 1 || ran2 > 1 {
					t.Errorf("intent %d ran %d times before the kill and %d after; want at least once, at most once in each", i, ran1, ran2)
				}
				if (len(sink1.of(in.ID)) > 0 || src1.ackedOf(in.ID) > 0) && !store.durable[in.ID] {
					t.Errorf("intent %d was published or acknowledged before the kill, and its completion was not durable", i)
				}
				if ran2 == 1 && store.durable[in.ID] {
					t.Errorf("intent %d ran again though its completion was durable before the kill", i)
				}
				if ran1 == 1 && ran2 == 1 {
					dups++
					if r := sink2.of(in.ID); len(r) != 1 || !strings.HasPrefix(r[0].ErrorMessage, "effect unknown") {
						t.Errorf("intent %d ran twice (the kill fell between its run and its completion), and its result %v does not say the effect is unknown", i, r)
					}
				}
				for _, r := range results {
					if r.Status != intent.StatusOK {
						t.Errorf("intent %d: result %s %q, want OK", i, r.Status, r.ErrorMessage)
					}
				}
			}
			t.Logf("killed %s: %d ran before the kill, %d completions durable, %d ran twice", at, len(fx.n[0]), len(store.durable), dups)
		})
	}
}
