package effector_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/syncbuf"
	"github.com/beam-agents/toolreg/registry"
)

// gateTools is a table with one side-effecting tool, "gate", whose function
// waits until release is closed, or until its own context ends (then it
// returns that context's error, as a well-behaved function does).
type gateTools struct {
	table   *registry.Registry
	calls   atomic.Int32
	entered chan struct{} // closed when the function is first invoked
	release chan struct{}
	once    sync.Once
	ctxErr  atomic.Value // the error of the function's context when it returned
}

func newGateTools(t testing.TB) *gateTools {
	t.Helper()
	g := &gateTools{entered: make(chan struct{}), release: make(chan struct{})}
	b := bindings.New([]*toolreg.Spec{spec("gate", true)})
	bindings.Effect(b, "gate", func(ctx context.Context, _ noArgs) (string, error) {
		g.calls.Add(1)
		g.once.Do(func() { close(g.entered) })
		select {
		case <-g.release:
			g.ctxErr.Store(errBox{ctx.Err()})
			return "applied", nil
		case <-ctx.Done():
			g.ctxErr.Store(errBox{ctx.Err()})
			return "", context.Cause(ctx)
		}
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	g.table = bound.Effector
	t.Cleanup(func() { g.open() })
	return g
}

type errBox struct{ err error }

var openMu sync.Mutex

func (g *gateTools) open() {
	openMu.Lock()
	defer openMu.Unlock()
	select {
	case <-g.release:
	default:
		close(g.release)
	}
}

func newGateEffector(t testing.TB, g *gateTools, store effector.DedupStore, opts ...effector.Option) *effector.Effector {
	t.Helper()
	opts = append([]effector.Option{effector.WithClock(fixedClock), effector.WithLogger(quietLogger()),
		effector.WithBackoff(time.Millisecond, 5*time.Millisecond)}, opts...)
	e, err := effector.New(g.table, store, opts...)
	if err != nil {
		t.Fatalf("effector.New: %v", err)
	}
	return e
}

// storeState reads what store holds for id without disturbing a live claim
// (a claim of an in-flight intent changes nothing).
func storeState(t *testing.T, store effector.DedupStore, in *intent.Intent) effector.Claim {
	t.Helper()
	c, err := store.Claim(context.Background(), in.ID, effector.CallOf(in), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if c.State == effector.Claimed {
		t.Fatalf("intent %s was free in the store (claimed it now): its execution left no claim", in.ID)
	}
	return c
}

// TestACancelledCallerNeverRecordsAResultForAFunctionStillRunning is item 1
// of issue 13: the caller's context ending (an MCP request cancelled, a
// shutdown) must not record a terminal result while the function runs. The
// function runs on, unaware; Process returns the caller's error at once; the
// function's real outcome is recorded when it returns, and a second Process
// returns it without running the function again.
func TestACancelledCallerNeverRecordsAResultForAFunctionStillRunning(t *testing.T) {
	t.Parallel()
	g := newGateTools(t)
	store := effector.NewMemoryStore()
	e := newGateEffector(t, g, store)
	in := intentFor("gate", `{}`, 1)

	ctx, cancel := context.WithCancel(context.Background())
	type outcome struct {
		res intent.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := e.Process(ctx, in)
		done <- outcome{res, err}
	}()
	<-g.entered
	cancel()

	var first outcome
	select {
	case first = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Process did not return within 5s of its caller's context ending")
	}
	if first.err == nil || !errors.Is(first.err, context.Canceled) {
		t.Fatalf("Process after its caller gave up = %s %q, %v; want no result and an error wrapping context.Canceled", first.res.Status, first.res.ErrorMessage, first.err)
	}
	var de *effector.DetachedError
	if !errors.As(first.err, &de) || de.IntentID != in.ID || de.Tool != "gate" {
		t.Errorf("Process error = %v, want an *effector.DetachedError naming the intent and its tool", first.err)
	}
	if !strings.Contains(first.err.Error(), in.ID) || !strings.Contains(first.err.Error(), "process it again") {
		t.Errorf("error %q does not name the intent and say what to do", first.err)
	}
	if first.res.Status != intent.StatusUnspecified {
		t.Errorf("Process returned a %s result for a function still running", first.res.Status)
	}
	// Nothing terminal is recorded while the function runs: the claim holds.
	if c := storeState(t, store, in); c.State != effector.InFlight {
		t.Fatalf("while the function still runs the store holds %s, want in-flight (no result yet)", c.State)
	}

	g.open()
	// A second delivery waits for the running execution and returns what
	// really happened: OK, with the function's payload.
	res, err := e.Process(testCtx(t), in)
	if err != nil || res.Status != intent.StatusOK || string(res.Payload) != `"applied"` {
		t.Fatalf("second Process = %s %q %q, %v; want the real outcome: OK \"applied\"", res.Status, res.Payload, res.ErrorMessage, err)
	}
	if n := g.calls.Load(); n != 1 {
		t.Errorf("the function ran %d times, want once", n)
	}
	if b, _ := g.ctxErr.Load().(errBox); b.err != nil {
		t.Errorf("the function's context ended (%v) with its caller's: only the tool timeout may end it", b.err)
	}
	if c := storeState(t, store, in); c.State != effector.Done || !bytes.Equal(c.Result, marshal(t, res)) {
		t.Errorf("the store holds %s %q, want the OK result", c.State, c.Result)
	}
	if got := e.Stats().Detached; got != 1 {
		t.Errorf("Stats().Detached = %d, want 1", got)
	}
}

// TestOnlyTheToolTimeoutEndsACallEarly: the timeout still ends a function
// (its context ends with a *TimeoutError) and records ERROR saying the
// effect is unknown, though the caller's context never ended.
func TestOnlyTheToolTimeoutEndsACallEarly(t *testing.T) {
	t.Parallel()
	g := newGateTools(t)
	store := effector.NewMemoryStore()
	e := newGateEffector(t, g, store, effector.WithToolTimeout("gate", 30*time.Millisecond))
	in := intentFor("gate", `{}`, 1)
	ctx, cancel := context.WithCancel(context.Background()) // can end, never does
	defer cancel()
	res, err := e.Process(ctx, in)
	if err != nil || res.Status != intent.StatusError || !strings.Contains(res.ErrorMessage, "effect is unknown") {
		t.Fatalf("Process = %s %q, %v; want ERROR saying the effect is unknown", res.Status, res.ErrorMessage, err)
	}
	if b, _ := g.ctxErr.Load().(errBox); !errors.Is(b.err, context.DeadlineExceeded) {
		t.Errorf("the function's context ended with %v, want context.DeadlineExceeded", b.err)
	}
}

// TestAnExitBeforeTheFunctionReturnsLeavesTheClaimToLapse: when the caller
// is gone and the process exits before the function returns, nothing was
// released nor completed, so the next owner, once the lease ends, sees the
// intent as Reclaimed and its result says the effect is unknown.
func TestAnExitBeforeTheFunctionReturnsLeavesTheClaimToLapse(t *testing.T) {
	t.Parallel()
	g := newGateTools(t)
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	store := &countingStore{DedupStore: effector.NewMemoryStore(effector.WithStoreClock(clock))}
	in := intentFor("gate", `{}`, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-g.entered; cancel() }()
	if _, err := newGateEffector(t, g, store).Process(ctx, in); !errors.Is(err, context.Canceled) {
		t.Fatalf("Process = %v, want context.Canceled", err)
	}
	if n := store.completes.Load() + store.releases.Load(); n != 0 {
		t.Fatalf("the cancelled Process completed or released the claim (%d calls) while the function ran", n)
	}
	// "The process exits": this effector is dropped with its function still
	// running; the lease ends.
	mu.Lock()
	now = now.Add(effector.DefaultLease + time.Second)
	mu.Unlock()
	c, err := store.DedupStore.Claim(context.Background(), in.ID, effector.CallOf(in), time.Minute)
	if err != nil || c.State != effector.Claimed || !c.Reclaimed {
		t.Fatalf("claim after the lease = %+v, %v; want Claimed and Reclaimed", c, err)
	}
}

// completeFailing fails the first n Completes (all of them when n < 0).
type completeFailing struct {
	effector.DedupStore
	n         int32
	completes atomic.Int32
}

func (s *completeFailing) Complete(ctx context.Context, id, token string, res []byte, ttl time.Duration) error {
	if k := s.completes.Add(1); s.n < 0 || k <= s.n {
		return errors.New("disk I/O error: database or disk is full")
	}
	return s.DedupStore.Complete(ctx, id, token, res, ttl)
}

// TestAResultTheStoreCannotRecordIsNeverReportedAsSuccess is item 5 of issue
// 13: Complete is retried with backoff until the lease's end; if it never
// succeeds, Process returns an error and no result (so Serve acknowledges
// nothing), the failure is counted and logged once, and the next owner sees
// the intent as Reclaimed.
func TestAResultTheStoreCannotRecordIsNeverReportedAsSuccess(t *testing.T) {
	t.Parallel()
	g := newGateTools(t)
	g.open()
	mem := effector.NewMemoryStore()
	store := &completeFailing{DedupStore: mem, n: -1}
	var buf syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	const lease = time.Second
	e := newGateEffector(t, g, store, effector.WithLease(lease), effector.WithTimeout(100*time.Millisecond), effector.WithLogger(logger))
	in := intentFor("gate", `{}`, 1)

	start := time.Now()
	res, err := e.Process(testCtx(t), in)
	took := time.Since(start)
	var ue *effector.UnrecordedError
	if !errors.As(err, &ue) || ue.IntentID != in.ID {
		t.Fatalf("Process = %s %q, %v; want an *effector.UnrecordedError naming the intent", res.Status, res.ErrorMessage, err)
	}
	if res.Status != intent.StatusUnspecified {
		t.Errorf("Process returned a %s result the store does not hold", res.Status)
	}
	if !strings.Contains(err.Error(), "disk is full") || !strings.Contains(err.Error(), in.ID) {
		t.Errorf("error %q does not name the intent and the store's error", err)
	}
	if n := store.completes.Load(); n < 2 {
		t.Errorf("Complete was tried %d times, want retries until the lease's end", n)
	}
	if took < lease/2 || took > lease+2*time.Second {
		t.Errorf("Process took %v, want it to retry until about the lease's end (%v)", took, lease)
	}
	if got := e.Stats().Unrecorded; got != 1 {
		t.Errorf("Stats().Unrecorded = %d, want 1", got)
	}
	log := buf.String()
	logged := strings.Count(log, "result not recorded")
	hasID := strings.Contains(log, in.ID)
	if logged != 1 || !hasID {
		t.Errorf("the failure was logged %d times (with the id: %v), want once with the id:\n%s", logged, hasID, log)
	}
	// The outcome stays recoverable: once the lease ends the next owner finds
	// the intent reclaimed.
	waitFor(t, func() bool {
		c, err := mem.Claim(context.Background(), in.ID, effector.CallOf(in), time.Minute)
		if err != nil || c.State == effector.Done {
			t.Fatalf("after the failed writes the store holds %+v, %v", c, err)
		}
		return c.State == effector.Claimed && c.Reclaimed
	})
}

// TestAResultWriteThatFailsThenSucceedsIsRecorded: a store that recovers
// within the lease gets the result, and Process reports it.
func TestAResultWriteThatFailsThenSucceedsIsRecorded(t *testing.T) {
	t.Parallel()
	g := newGateTools(t)
	g.open()
	mem := effector.NewMemoryStore()
	store := &completeFailing{DedupStore: mem, n: 2}
	e := newGateEffector(t, g, store)
	in := intentFor("gate", `{}`, 1)
	res, err := e.Process(testCtx(t), in)
	if err != nil || res.Status != intent.StatusOK {
		t.Fatalf("Process = %s %q, %v; want OK once the store recovers", res.Status, res.ErrorMessage, err)
	}
	if n := store.completes.Load(); n != 3 {
		t.Errorf("Complete was tried %d times, want 3 (two failures, then success)", n)
	}
	if c := storeState(t, mem, in); c.State != effector.Done || !bytes.Equal(c.Result, marshal(t, res)) {
		t.Errorf("the store holds %s, want the OK result Process returned", c.State)
	}
	if got := e.Stats().Unrecorded; got != 0 {
		t.Errorf("Stats().Unrecorded = %d, want 0", got)
	}
}

// oneSource delivers one intent, then blocks until ctx ends; it counts acks.
type oneSource struct {
	in   *intent.Intent
	sent bool
	acks atomic.Int32
}

func (s *oneSource) Receive(ctx context.Context) (effector.Delivery, error) {
	if !s.sent {
		s.sent = true
		return effector.Delivery{Intent: s.in, Pos: "one:1", Ack: func(context.Context) error { s.acks.Add(1); return nil }}, nil
	}
	<-ctx.Done()
	return effector.Delivery{}, ctx.Err()
}

type countSink struct{ n atomic.Int32 }

func (s *countSink) Publish(context.Context, intent.Result) error { s.n.Add(1); return nil }

// TestServeNeverAcknowledgesAnIntentWhoseResultWasNotRecorded: with a store
// that cannot record results, Serve publishes nothing and acknowledges
// nothing, and stops with the delivery unanswered.
func TestServeNeverAcknowledgesAnIntentWhoseResultWasNotRecorded(t *testing.T) {
	t.Parallel()
	g := newGateTools(t)
	g.open()
	store := &completeFailing{DedupStore: effector.NewMemoryStore(), n: -1}
	e := newGateEffector(t, g, store, effector.WithLease(200*time.Millisecond), effector.WithTimeout(50*time.Millisecond))
	src := &oneSource{in: intentFor("gate", `{}`, 1)}
	sink := &countSink{}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	err := effector.Serve(ctx, src, sink, e, effector.WithServeLogger(quietLogger()), effector.WithDrainTimeout(time.Second),
		effector.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	var ue *effector.UnansweredError
	if !errors.As(err, &ue) || ue.Unanswered != 1 {
		t.Fatalf("Serve = %v, want an *UnansweredError with the one delivery", err)
	}
	if n := src.acks.Load(); n != 0 {
		t.Errorf("Serve acknowledged the intent %d times though its result was never recorded", n)
	}
	if n := sink.n.Load(); n != 0 {
		t.Errorf("Serve published %d results the store does not hold", n)
	}
	if store.completes.Load() == 0 {
		t.Fatal("Complete was never called: the test proves nothing")
	}
}

// TestNewRefusesALeaseThatDoesNotCoverTheLongestTimeoutTheStoreTimeoutAndTheMargin
// is item 7 of issue 13: after the longest tool timeout the watchdog still has
// to record ERROR, a store call bounded by the store timeout, before the lease
// ends, with LeaseMargin to spare.
func TestNewRefusesALeaseThatDoesNotCoverTheLongestTimeoutTheStoreTimeoutAndTheMargin(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	store := effector.NewMemoryStore()
	tests := []struct {
		name string
		opts []effector.Option
		want string // "" when New must accept
	}{
		{"a lease that covers the timeout but not the store timeout is refused",
			[]effector.Option{effector.WithLease(time.Second), effector.WithTimeout(800 * time.Millisecond), effector.WithStoreTimeout(150 * time.Millisecond)},
			"lease 1s does not exceed the tool timeout 800ms plus the store timeout 150ms plus the margin 100ms (1.05s)"},
		{"a lease that covers the timeout and store timeout but not the margin is refused",
			[]effector.Option{effector.WithLease(time.Second), effector.WithTimeout(900 * time.Millisecond)},
			"lease 1s does not exceed the tool timeout 900ms plus the store timeout 0s plus the margin 100ms (1s)"},
		{"one tool's longer timeout is named",
			[]effector.Option{effector.WithLease(time.Second), effector.WithTimeout(100 * time.Millisecond), effector.WithStoreTimeout(200 * time.Millisecond), effector.WithToolTimeout("refund", 750*time.Millisecond)},
			`lease 1s does not exceed the timeout 750ms of tool "refund" plus the store timeout 200ms plus the margin 100ms (1.05s)`},
		{"a lease above the sum is accepted",
			[]effector.Option{effector.WithLease(time.Second), effector.WithTimeout(700 * time.Millisecond), effector.WithStoreTimeout(199 * time.Millisecond)},
			""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := effector.New(tl.table, store, tt.opts...)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("New = %v, want it accepted", err)
				}
				return
			}
			var ce *effector.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "WithLease") {
				t.Fatalf("New error = %v, want a *effector.ConfigError saying %q and what to set", err, tt.want)
			}
		})
	}
	if effector.LeaseMargin != 100*time.Millisecond {
		t.Errorf("LeaseMargin = %v, the messages above state 100ms", effector.LeaseMargin)
	}
}

// TestAnExpiredIntentIsLoggedAtWarnWithItsAgeAndTTL is item 9 of issue 13:
// Process returns EXPIRED with a nil error, so the expiry must be loud.
func TestAnExpiredIntentIsLoggedAtWarnWithItsAgeAndTTL(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	var buf syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	in := intentFor("refund", `{"order_id":"o-1","amount":30}`, 2)
	in.CreatedAtMs = t0.Add(-90 * time.Minute).UnixMilli()
	in.ExpiresAtMs = t0.Add(-30 * time.Minute).UnixMilli() // a 1h TTL, staged 1h30m ago
	res, err := newEffector(t, tl, effector.NewMemoryStore(), effector.WithLogger(logger)).Process(testCtx(t), in)
	if err != nil || res.Status != intent.StatusExpired {
		t.Fatalf("Process = %s, %v; want EXPIRED", res.Status, err)
	}
	if !strings.Contains(res.ErrorMessage, "1h30m0s ago") || !strings.Contains(res.ErrorMessage, "time-to-live of 1h0m0s") {
		t.Errorf("EXPIRED message %q does not give the age and time-to-live", res.ErrorMessage)
	}
	log := buf.String()
	for _, want := range []string{"level=WARN", "expired", "intent_id=" + in.ID, "age=1h30m0s", "ttl=1h0m0s"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log does not hold %q:\n%s", want, log)
		}
	}
}

// TestAnIntentWhoseIDIsNotItsPositionsIsRefusedAndNeverRun is part of item
// 10 of issue 13: an intent id is IntentID(entity key, seq, step); one that
// is not (a producer bug that would run one step twice under two ids) is
// refused, signed or not, before the store, and the function never runs.
func TestAnIntentWhoseIDIsNotItsPositionsIsRefusedAndNeverRun(t *testing.T) {
	t.Parallel()
	for _, signed := range []bool{false, true} {
		name := "unsigned, signatures off"
		if signed {
			name = "signed, signatures required"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tl := newTools(t)
			store := &countingStore{DedupStore: effector.NewMemoryStore()}
			var dead []error
			opts := []effector.Option{effector.WithDeadLetter(func(_ context.Context, _ *intent.Intent, reason error) error {
				dead = append(dead, reason)
				return nil
			})}
			in := intentFor("refund", `{"order_id":"o-1","amount":30}`, 2)
			in.ID = intent.IntentID(entityKey, 7, 1) // step 1's id on step 2
			if signed {
				opts = append(opts, effector.WithVerify(effector.VerifyRequire, signingKeys))
				if err := in.SignHMAC("k1", signingKeys["k1"]); err != nil {
					t.Fatal(err)
				}
			}
			res, err := newEffector(t, tl, store, opts...).Process(testCtx(t), in)
			var re *effector.RefusedError
			var ie *effector.IntentIDError
			if !errors.As(err, &re) || !errors.As(err, &ie) || !errors.Is(err, effector.ErrMalformedIntent) {
				t.Fatalf("Process error = %v, want a *RefusedError with an *IntentIDError", err)
			}
			if ie.ID != in.ID || ie.Want != intent.IntentID(entityKey, 7, 2) || ie.Step != 2 {
				t.Errorf("IntentIDError = %+v, want the id, the one its position gives, and the step", ie)
			}
			for _, want := range []string{in.ID, ie.Want, "step 2", "runner.Activation"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if res.Status != intent.StatusRejected || res.IntentID != in.ID || !strings.Contains(res.ErrorMessage, ie.Want) {
				t.Errorf("Process result = %s %q, want REJECTED saying why", res.Status, res.ErrorMessage)
			}
			if len(dead) != 1 || !errors.As(dead[0], &ie) {
				t.Errorf("dead-letter reasons = %v, want the *IntentIDError once", dead)
			}
			if n := tl.calls.Load(); n != 0 {
				t.Errorf("the function ran %d times, want never", n)
			}
			if n := store.touched(); n != 0 {
				t.Errorf("the store was called %d times, want never", n)
			}
		})
	}
}

// TestAnIntentForAReadOnlyToolIsRejectedAsReadOnlyNotAsUnknown is part of
// item 10 of issue 13: bindings.Bound.Effector holds no read-only tool, but an
// intent naming one is told it is read-only and belongs inline, not that no
// such tool exists.
func TestAnIntentForAReadOnlyToolIsRejectedAsReadOnlyNotAsUnknown(t *testing.T) {
	t.Parallel()
	b := bindings.New([]*toolreg.Spec{spec("lookup", false), spec("refund", true, param("order_id", toolreg.TypeString))})
	var calls atomic.Int32
	bindings.ReadOnly(b, "lookup", func(context.Context, noArgs) (string, error) { calls.Add(1); return "found", nil })
	bindings.Effect(b, "refund", func(context.Context, struct {
		OrderID string `json:"order_id"`
	}) (string, error) {
		calls.Add(1)
		return "ok", nil
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	if bound.Effector.Len() != 1 {
		t.Fatalf("the effect table holds %d tools, want only refund", bound.Effector.Len())
	}
	e, err := effector.New(bound.Effector, effector.NewMemoryStore(), effector.WithClock(fixedClock), effector.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	in := intentFor("lookup", `{}`, 1)
	res, err := e.Process(testCtx(t), in)
	if err != nil || res.Status != intent.StatusRejected {
		t.Fatalf("Process = %s %q, %v; want REJECTED", res.Status, res.ErrorMessage, err)
	}
	for _, want := range []string{in.ID, `"lookup"`, "read-only", "inline"} {
		if !strings.Contains(res.ErrorMessage, want) {
			t.Errorf("REJECTED message %q does not say %q", res.ErrorMessage, want)
		}
	}
	if strings.Contains(res.ErrorMessage, "no tool named") {
		t.Errorf("REJECTED message %q calls a read-only tool unknown", res.ErrorMessage)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("a function ran %d times, want never", n)
	}
	// A name no table knows is still unknown.
	res, _ = e.Process(testCtx(t), intentFor("lookpu", `{}`, 2))
	if !strings.Contains(res.ErrorMessage, "no tool named") {
		t.Errorf("an unknown tool's message = %q, want no tool named", res.ErrorMessage)
	}
}

// TestArgumentsAboveTheSizeLimitAreRejectedBeforeTheyAreDecoded is part of
// item 10 of issue 13: a signed 64 MB intent ran. The effector refuses
// arguments above its limit (toolreg.DefaultMaxArgsBytes unless set, per tool
// or for all) as REJECTED, and the function never runs.
func TestArgumentsAboveTheSizeLimitAreRejectedBeforeTheyAreDecoded(t *testing.T) {
	t.Parallel()
	args := func(n int) string { // {"order_id":"xxx...","amount":30}, n bytes
		pad := n - len(`{"order_id":"","amount":30}`)
		return `{"order_id":"` + strings.Repeat("x", pad) + `","amount":30}`
	}
	tests := []struct {
		name  string
		opts  []effector.Option
		size  int
		limit int // 0: accepted
	}{
		{"arguments above the default limit are rejected", nil, toolreg.DefaultMaxArgsBytes + 1, toolreg.DefaultMaxArgsBytes},
		{"arguments at the default limit are accepted", nil, toolreg.DefaultMaxArgsBytes, 0},
		{"a global limit applies to every tool", []effector.Option{effector.WithMaxArgsBytes(100)}, 101, 100},
		{"a tool's own limit overrides the global one", []effector.Option{effector.WithMaxArgsBytes(100), effector.WithToolMaxArgsBytes("refund", 200)}, 150, 0},
		{"a tool's own limit is enforced", []effector.Option{effector.WithToolMaxArgsBytes("refund", 50)}, 51, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := newTools(t)
			in := intentFor("refund", args(tt.size), 2)
			if len(in.ArgsJSON) != tt.size {
				t.Fatalf("built %d bytes of arguments, want %d", len(in.ArgsJSON), tt.size)
			}
			res, err := newEffector(t, tl, effector.NewMemoryStore(), tt.opts...).Process(testCtx(t), in)
			if err != nil {
				t.Fatal(err)
			}
			if tt.limit == 0 {
				if res.Status != intent.StatusOK {
					t.Fatalf("Process = %s %q, want OK", res.Status, res.ErrorMessage)
				}
				return
			}
			want := (&toolreg.ArgumentsTooLargeError{Tool: "refund", Size: tt.size, Limit: tt.limit}).Error()
			if res.Status != intent.StatusRejected || !strings.Contains(res.ErrorMessage, want) || !strings.Contains(res.ErrorMessage, in.ID) {
				t.Fatalf("Process = %s %q, want REJECTED naming the intent and saying %q", res.Status, res.ErrorMessage, want)
			}
			if n := tl.calls.Load(); n != 0 {
				t.Errorf("the function ran %d times, want never", n)
			}
		})
	}
	t.Run("New refuses a non-positive limit and a limit for a tool it does not hold", func(t *testing.T) {
		t.Parallel()
		tl := newTools(t)
		_, err := effector.New(tl.table, effector.NewMemoryStore(), effector.WithMaxArgsBytes(0), effector.WithToolMaxArgsBytes("refnud", 10))
		if err == nil || !strings.Contains(err.Error(), "WithMaxArgsBytes is 0") || !strings.Contains(err.Error(), `WithToolMaxArgsBytes("refnud")`) {
			t.Fatalf("New = %v, want both problems named", err)
		}
	})
}
