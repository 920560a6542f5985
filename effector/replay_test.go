package effector_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/intent"
)

// replayStores are the stores the replay tests run on: each must keep the
// call with the claim.
func replayStores(t *testing.T) map[string]effector.DedupStore {
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "dedup.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return map[string]effector.DedupStore{"memory": effector.NewMemoryStore(), "sqlite": s}
}

func TestAReplayAskingForAnotherCallUnderAKnownIDIsRejectedWithoutTheOldResult(t *testing.T) {
	t.Parallel()
	for name, store := range replayStores(t) {
		t.Run("on "+name, func(t *testing.T) {
			tl := newTools(t)
			e := newEffector(t, tl, store)
			first := intentFor("refund", `{"order_id":"o-1","amount":30}`, 4)
			ok, err := e.Process(testCtx(t), first)
			if err != nil || ok.Status != intent.StatusOK {
				t.Fatalf("first Process = %v, %v; want OK", ok.Status, err)
			}
			for _, tc := range []struct {
				name string
				in   *intent.Intent
			}{
				{"other arguments", intentFor("refund", `{"order_id":"o-1","amount":3000}`, 4)},
				{"another tool", intentFor("notify", `{"intent":"x"}`, 4)},
			} {
				res, err := e.Process(testCtx(t), tc.in)
				var nd *effector.NonDeterministicError
				if !errors.As(err, &nd) {
					t.Fatalf("%s under the same id: err = %v, want a *NonDeterministicError", tc.name, err)
				}
				if nd.IntentID != first.ID || nd.Step != 4 || nd.Recorded != effector.CallOf(first) || nd.Asked != effector.CallOf(tc.in) {
					t.Errorf("%s: error = %+v, want the id, step 4, the recorded call and the new one", tc.name, nd)
				}
				if res.Status != intent.StatusRejected || res.Payload != nil || res.IntentID != first.ID {
					t.Errorf("%s: result = %v %q for %q, want REJECTED for %q with no payload (never the old one)", tc.name, res.Status, res.Payload, res.IntentID, first.ID)
				}
				for _, want := range []string{first.ID, "step 4", "non-deterministic replay", `tool "refund"`, `tool "` + tc.in.ToolName + `"`, "sha256:"} {
					if !strings.Contains(res.ErrorMessage, want) {
						t.Errorf("%s: message %q does not name %q", tc.name, res.ErrorMessage, want)
					}
				}
			}
			if n := tl.calls.Load(); n != 1 {
				t.Fatalf("functions invoked %d times, want 1: a replay with another call must not run", n)
			}
			// The recorded call still gets its own result.
			again, err := e.Process(testCtx(t), first)
			if err != nil || again.Status != intent.StatusOK || string(again.Payload) != string(ok.Payload) {
				t.Fatalf("the first call again = %v %q, %v; want its OK result", again.Status, again.Payload, err)
			}
		})
	}
}

func TestAReplayAskingForAnotherCallWhileTheFirstRunsIsRejected(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	e := newEffector(t, tl, effector.NewMemoryStore())
	first := intentFor("stuck", `{}`, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Process(testCtx(t), first)
	}()
	waitFor(t, func() bool { return tl.started(first.ID) })
	other := intentFor("refund", `{"order_id":"o-2","amount":1}`, 1)
	ctx, cancel := context.WithTimeout(testCtx(t), 5*time.Second)
	defer cancel()
	res, err := e.Process(ctx, other)
	var nd *effector.NonDeterministicError
	if !errors.As(err, &nd) || res.Status != intent.StatusRejected {
		t.Fatalf("another call while the first is in flight = %v, %v; want REJECTED with a *NonDeterministicError, at once", res.Status, err)
	}
	close(tl.release)
	<-done
	if n := tl.calls.Load(); n != 1 {
		t.Fatalf("functions invoked %d times, want 1", n)
	}
}

func TestTheSameCallWithReorderedArgumentsIsNoMismatch(t *testing.T) {
	t.Parallel()
	a := effector.NewCall("refund", []byte(`{"order_id":"o-1","amount":30}`))
	b := effector.NewCall("refund", []byte(` { "amount" : 30, "order_id" : "o-1" } `))
	if a != b {
		t.Fatalf("NewCall of the same arguments reordered and spaced: %v != %v", a, b)
	}
	if c := effector.NewCall("refund", []byte(`{"order_id":"o-1","amount":31}`)); c == a {
		t.Fatalf("NewCall of other arguments = %v, the same as %v", c, a)
	}
	if c := effector.NewCall("refunds", []byte(`{"order_id":"o-1","amount":30}`)); c.Digest == a.Digest {
		t.Fatalf("NewCall of another tool has the same digest")
	}
	long := strings.Repeat("é", 100)
	if c := effector.NewCall(long, nil); len(c.Tool) > effector.MaxCallToolBytes || !strings.HasPrefix(long, c.Tool) {
		t.Fatalf("NewCall kept %d bytes of a %d-byte tool name (%q), want a prefix of at most %d", len(c.Tool), len(long), c.Tool, effector.MaxCallToolBytes)
	}
}

func TestAPoisonIntentIsGivenUpAfterMaxAttemptsWithAnErrorResultAndADeadLetter(t *testing.T) {
	t.Parallel()
	now := t0
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	store := effector.NewMemoryStore(effector.WithStoreClock(clock))
	tl := newTools(t)
	var dead []error
	deadLetter := func(ctx context.Context, in *intent.Intent, reason error) error {
		dead = append(dead, reason)
		return nil
	}
	// A worker that crashes mid-tool, again and again: its claims lapse.
	for attempt := 1; attempt <= 3; attempt++ {
		c, err := store.Claim(context.Background(), intentFor("refund", `{"order_id":"o-1","amount":30}`, 9).ID,
			effector.CallOf(intentFor("refund", `{"order_id":"o-1","amount":30}`, 9)), time.Minute)
		if err != nil || c.State != effector.Claimed || c.Attempts != attempt {
			t.Fatalf("crashing claim %d = %+v, %v", attempt, c, err)
		}
		advance(2 * time.Minute)
	}
	e := newEffector(t, tl, store, effector.WithMaxAttempts(3), effector.WithDeadLetter(deadLetter))
	in := intentFor("refund", `{"order_id":"o-1","amount":30}`, 9)
	res, err := e.Process(testCtx(t), in)
	if err != nil {
		t.Fatalf("Process of a poison intent: %v, want its terminal ERROR result", err)
	}
	if res.Status != intent.StatusError || !strings.Contains(res.ErrorMessage, "4 attempts") || !strings.Contains(res.ErrorMessage, in.ID) || !strings.Contains(res.ErrorMessage, "WithMaxAttempts") {
		t.Fatalf("result = %v %q, want ERROR naming the intent, its 4 attempts and WithMaxAttempts", res.Status, res.ErrorMessage)
	}
	if n := tl.calls.Load(); n != 0 {
		t.Fatalf("the function ran %d times past the attempt limit, want 0", n)
	}
	var pe *effector.PoisonError
	if len(dead) != 1 || !errors.As(dead[0], &pe) || pe.Attempts != 4 || pe.Max != 3 {
		t.Fatalf("dead letters = %v, want one *PoisonError with 4 attempts of 3", dead)
	}
	// It is terminal: the next delivery reads the same result and runs nothing.
	again, err := e.Process(testCtx(t), in)
	if err != nil || again.Status != intent.StatusError || again.ErrorMessage != res.ErrorMessage || tl.calls.Load() != 0 {
		t.Fatalf("the next delivery = %v %q, %v; want the recorded ERROR", again.Status, again.ErrorMessage, err)
	}
}

func TestAnIntentDeliveredPastMaxAttemptsIsGivenUpEvenWhenTheStoreFailsForIt(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	var dead []error
	e := newEffector(t, tl, failingStore{}, effector.WithMaxAttempts(2), effector.WithDeadLetter(func(ctx context.Context, in *intent.Intent, reason error) error {
		dead = append(dead, reason)
		return nil
	}))
	in := intentFor("refund", `{"order_id":"o-1","amount":30}`, 1)
	if _, err := e.Process(effector.WithDeliveryCount(testCtx(t), 2), in); err == nil {
		t.Fatal("Process within the limit with a failing store: err = nil, want the store's error, for a redelivery")
	}
	res, err := e.Process(effector.WithDeliveryCount(testCtx(t), 3), in)
	if err != nil || res.Status != intent.StatusError || !strings.Contains(res.ErrorMessage, "3 attempts") {
		t.Fatalf("Process of the third delivery = %v %q, %v; want an ERROR result naming 3 attempts", res.Status, res.ErrorMessage, err)
	}
	var pe *effector.PoisonError
	if len(dead) != 1 || !errors.As(dead[0], &pe) || pe.StoreErr == nil {
		t.Fatalf("dead letters = %v, want one *PoisonError carrying the store's error", dead)
	}
	if tl.calls.Load() != 0 {
		t.Fatal("the function ran")
	}
}

func TestANonPositiveMaxAttemptsIsRefused(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	_, err := effector.New(tl.table, effector.NewMemoryStore(), effector.WithMaxAttempts(0))
	var ce *effector.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "WithMaxAttempts(0)") {
		t.Fatalf("New with WithMaxAttempts(0): err = %v, want a *ConfigError naming it", err)
	}
}

// BenchmarkNewCall measures the digest Process adds before every claim, on
// arguments the size of a typical tool call; compare with BenchmarkProcess.
func BenchmarkNewCall(b *testing.B) {
	args := []byte(`{"order_id":"o-12345","amount":30,"reason":"customer request","notify":true}`)
	b.ReportAllocs()
	for b.Loop() {
		effector.NewCall("refund", args)
	}
}

func TestACancelledCallerNeverGivesAnIntentUpAsPoison(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	var dead []error
	e := newEffector(t, tl, effector.NewMemoryStore(), effector.WithMaxAttempts(1), effector.WithDeadLetter(func(ctx context.Context, in *intent.Intent, reason error) error {
		dead = append(dead, reason)
		return nil
	}))
	in := intentFor("refund", `{"order_id":"o-1","amount":30}`, 1)
	// A shutdown: the source redelivered the intent past the limit, but the
	// worker's context ends before the claim, so the store answers with the
	// context's error, not with a failure of its own.
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	res, err := e.Process(effector.WithDeliveryCount(ctx, 2), in)
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Process with a cancelled context = %v %q, %v; want context.Canceled and no result", res.Status, res.ErrorMessage, err)
	}
	if res.Status != 0 || len(dead) != 0 {
		t.Fatalf("a cancelled caller gave the intent up: result %v, dead letters %v", res.Status, dead)
	}
	// The next worker still runs it: nothing was recorded for it.
	again, err := e.Process(testCtx(t), in)
	if err != nil || again.Status != intent.StatusOK || tl.calls.Load() != 1 {
		t.Fatalf("the next delivery = %v %q, %v (ran %d times); want OK after one run", again.Status, again.ErrorMessage, err, tl.calls.Load())
	}
}
