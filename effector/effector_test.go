package effector_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/syncbuf"
	"github.com/beam-agents/toolreg/registry"
)

// t0 is the fixed time of the test clock, the T0 of the beam-agents fixtures.
var t0 = time.UnixMilli(1700000000000)

var entityKey = []byte("entity-1")

func fixedClock() time.Time { return t0 }

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// intentFor returns a valid, unexpired, unsigned TOOL intent at step.
func intentFor(tool, args string, step uint32) *intent.Intent {
	return &intent.Intent{
		ID:          intent.IntentID(entityKey, 7, step),
		EntityKey:   bytes.Clone(entityKey),
		Seq:         7,
		StepIndex:   step,
		ToolName:    tool,
		ArgsJSON:    []byte(args),
		CreatedAtMs: t0.UnixMilli(),
		ExpiresAtMs: t0.Add(time.Minute).UnixMilli(),
		Attempt:     1,
		Kind:        intent.KindTool,
	}
}

type refundArgs struct {
	OrderID string `json:"order_id"`
	Amount  int    `json:"amount"`
}

type refundReceipt struct {
	RefundID string `json:"refund_id"`
	Amount   int    `json:"amount"`
	Note     string `json:"note"`
}

type notifyArgs struct {
	Intent string `json:"intent"`
}

type noArgs struct{}

// tools is a table of side-effecting tools whose functions count their calls.
type tools struct {
	table *registry.Registry
	calls atomic.Int32 // invocations of any function in the table

	mu      sync.Mutex
	intents []effector.IntentInfo // what IntentFrom gave each invocation
	found   []bool

	// release unblocks "stuck", which ignores its context.
	release chan struct{}
	// hold delays "refund" so that concurrent workers find it in flight.
	hold time.Duration

	// What "patient", which waits for its context to end, saw.
	sawDeadline      time.Time
	hadDeadline      bool
	sawErr, sawCause error
}

// started reports whether a function has been invoked for the intent id.
func (tl *tools) started(id string) bool {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, info := range tl.intents {
		if info.ID == id {
			return true
		}
	}
	return false
}

func spec(name string, sideEffect bool, params ...*toolreg.Param) *toolreg.Spec {
	return &toolreg.Spec{Name: name, Description: "The " + name + " tool.", SideEffect: sideEffect, Params: params}
}

func param(name string, typ toolreg.Type) *toolreg.Param {
	return &toolreg.Param{Name: name, Schema: toolreg.Schema{Type: typ}}
}

func newTools(t testing.TB) *tools {
	t.Helper()
	tl := &tools{release: make(chan struct{})}
	t.Cleanup(func() {
		select {
		case <-tl.release:
		default:
			close(tl.release)
		}
	})
	amount := param("amount", toolreg.TypeInteger)
	amount.Minimum = "1"
	specs := []*toolreg.Spec{
		spec("refund", true, param("order_id", toolreg.TypeString), amount),
		spec("notify", true, param("intent", toolreg.TypeString)),
		spec("fail", true),
		spec("boom", true),
		spec("stuck", true),
		spec("nan", true),
		spec("patient", true),
		spec("lookup", false),
	}
	record := func(ctx context.Context) {
		tl.calls.Add(1)
		info, ok := effector.IntentFrom(ctx)
		tl.mu.Lock()
		tl.intents = append(tl.intents, info)
		tl.found = append(tl.found, ok)
		tl.mu.Unlock()
	}
	b := bindings.New(specs)
	bindings.Effect(b, "refund", func(ctx context.Context, a refundArgs) (refundReceipt, error) {
		record(ctx)
		if tl.hold > 0 {
			time.Sleep(tl.hold)
		}
		return refundReceipt{RefundID: "rf-" + a.OrderID, Amount: a.Amount, Note: "remboursé"}, nil
	})
	bindings.Effect(b, "notify", func(ctx context.Context, a notifyArgs) (string, error) {
		record(ctx)
		return "sent", nil
	})
	bindings.Effect(b, "fail", func(ctx context.Context, _ noArgs) (string, error) {
		record(ctx)
		return "", errors.New("payment provider said no")
	})
	bindings.Effect(b, "boom", func(ctx context.Context, _ noArgs) (string, error) {
		record(ctx)
		panic("nil map in refund path")
	})
	bindings.Effect(b, "stuck", func(ctx context.Context, _ noArgs) (string, error) {
		record(ctx)
		<-tl.release // ignores ctx on purpose
		return "late", nil
	})
	bindings.Effect(b, "nan", func(ctx context.Context, _ noArgs) (float64, error) {
		record(ctx)
		return math.NaN(), nil
	})
	bindings.Effect(b, "patient", func(ctx context.Context, _ noArgs) (string, error) {
		record(ctx)
		<-ctx.Done()
		deadline, ok := ctx.Deadline()
		tl.mu.Lock()
		tl.sawDeadline, tl.hadDeadline, tl.sawErr, tl.sawCause = deadline, ok, ctx.Err(), context.Cause(ctx)
		tl.mu.Unlock()
		return "", ctx.Err()
	})
	bindings.ReadOnly(b, "lookup", func(ctx context.Context, _ noArgs) (string, error) {
		record(ctx)
		return "found", nil
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatalf("Bind: %v", err)
	}
	tl.table = bound.Effector
	// A table with a read-only tool and a contract-only tool is a
	// misconfiguration the effector must survive intent by intent.
	lookup, err := bound.Pipeline.Get("lookup")
	if err != nil {
		t.Fatal(err)
	}
	mustRegister(t, tl.table, lookup)
	mustRegister(t, tl.table, toolreg.NewTool(spec("unbound", true)))
	return tl
}

func mustRegister(t testing.TB, r *registry.Registry, tool *toolreg.Tool) {
	t.Helper()
	if err := r.Register(tool); err != nil {
		t.Fatal(err)
	}
}

// countingStore counts the calls that reach the store it wraps.
type countingStore struct {
	effector.DedupStore
	claims, completes, releases atomic.Int32
	completeErr                 error // returned by Complete instead of storing, when set
}

func (s *countingStore) Claim(ctx context.Context, id string, call effector.Call, lease time.Duration) (effector.Claim, error) {
	s.claims.Add(1)
	return s.DedupStore.Claim(ctx, id, call, lease)
}

func (s *countingStore) Complete(ctx context.Context, id, token string, res []byte, ttl time.Duration) error {
	s.completes.Add(1)
	if s.completeErr != nil {
		return s.completeErr
	}
	return s.DedupStore.Complete(ctx, id, token, res, ttl)
}

func (s *countingStore) Release(ctx context.Context, id, token string) error {
	s.releases.Add(1)
	return s.DedupStore.Release(ctx, id, token)
}

func (s *countingStore) touched() int32 {
	return s.claims.Load() + s.completes.Load() + s.releases.Load()
}

func newEffector(t testing.TB, tl *tools, store effector.DedupStore, opts ...effector.Option) *effector.Effector {
	t.Helper()
	opts = append([]effector.Option{effector.WithClock(fixedClock), effector.WithLogger(quietLogger())}, opts...)
	e, err := effector.New(tl.table, store, opts...)
	if err != nil {
		t.Fatalf("effector.New: %v", err)
	}
	return e
}

func marshal(t testing.TB, r intent.Result) []byte {
	t.Helper()
	b, err := r.MarshalBinary()
	if err != nil {
		t.Fatalf("Result.MarshalBinary: %v", err)
	}
	return b
}

var ignoreUnexported = cmpopts.IgnoreUnexported(intent.Result{})

func TestProcessExecutesAToolAndReturnsItsCanonicalJSONAsOK(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	e := newEffector(t, tl, effector.NewMemoryStore())
	in := intentFor("refund", `{"order_id":"o-1","amount":"30"}`, 2)

	got, err := e.Process(testCtx(t), in)
	if err != nil {
		t.Fatalf("Process: %v", err)
	}
	want := intent.Result{
		IntentID:      intent.IntentID(entityKey, 7, 2),
		EntityKey:     entityKey,
		Seq:           7,
		Status:        intent.StatusOK,
		Payload:       []byte(`{"amount":30,"note":"remboursé","refund_id":"rf-o-1"}`),
		CompletedAtMs: t0.UnixMilli(),
	}
	if diff := cmp.Diff(want, got, ignoreUnexported); diff != "" {
		t.Errorf("Process result (-want +got):\n%s", diff)
	}
	if n := tl.calls.Load(); n != 1 {
		t.Errorf("the function was invoked %d times, want 1", n)
	}
}

func TestTheFunctionFindsItsIntentWithIntentFromAndArgumentsCannotOverrideIt(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	e := newEffector(t, tl, effector.NewMemoryStore())
	in := intentFor("notify", `{"intent":"forged-intent-id"}`, 4)
	in.Attempt = 3

	res, err := e.Process(testCtx(t), in)
	if err != nil || res.Status != intent.StatusOK {
		t.Fatalf("Process = %v, %v; want OK", res.Status, err)
	}
	want := []effector.IntentInfo{{ID: in.ID, EntityKey: entityKey, Seq: 7, Step: 4, Attempt: 3}}
	if diff := cmp.Diff(want, tl.intents); diff != "" {
		t.Errorf("IntentFrom in the function (-want +got):\n%s", diff)
	}
	if !tl.found[0] {
		t.Errorf("IntentFrom found no intent in the function's context")
	}
	if _, ok := effector.IntentFrom(context.Background()); ok {
		t.Errorf("IntentFrom found an intent in a context the effector did not make")
	}
}

func TestAnExpiredIntentNeverReachesTheStore(t *testing.T) {
	t.Parallel()
	now := t0.UnixMilli()
	tests := []struct {
		name      string
		expiresAt int64
		wantMsg   string
	}{
		{"an intent that expired a second ago is expired", now - 1000, "expired at"},
		{"an intent that expires this millisecond is expired", now, "expired at"},
		{"an intent with no expiry is expired", 0, "has no expiry"},
		{"an intent with a negative expiry is expired", -5, "has no expiry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := newTools(t)
			store := &countingStore{DedupStore: effector.NewMemoryStore()}
			e := newEffector(t, tl, store)
			in := intentFor("refund", `{"order_id":"o-1","amount":30}`, 2)
			in.ExpiresAtMs = tt.expiresAt

			res, err := e.Process(testCtx(t), in)
			if err != nil {
				t.Fatalf("Process: %v", err)
			}
			if res.Status != intent.StatusExpired || !strings.Contains(res.ErrorMessage, tt.wantMsg) {
				t.Errorf("Process = %s %q, want EXPIRED saying %q", res.Status, res.ErrorMessage, tt.wantMsg)
			}
			if res.IntentID != in.ID || res.Seq != 7 || !bytes.Equal(res.EntityKey, entityKey) || res.CompletedAtMs != now {
				t.Errorf("EXPIRED result does not identify its intent: %+v", res)
			}
			if n := store.touched(); n != 0 {
				t.Errorf("the store was called %d times for an expired intent, want 0", n)
			}
			if n := tl.calls.Load(); n != 0 {
				t.Errorf("the function was invoked %d times, want 0", n)
			}
		})
	}
}

var signingKeys = map[string][]byte{"k1": []byte("0123456789abcdef0123456789abcdef")}

func TestSignatureVerificationRefusesWithoutAResult(t *testing.T) {
	t.Parallel()
	signed := func(t *testing.T, keyID string, key []byte) *intent.Intent {
		in := intentFor("refund", `{"amount":30,"order_id":"o-1"}`, 2)
		if err := in.SignHMAC(keyID, key); err != nil {
			t.Fatal(err)
		}
		return in
	}
	unsigned := func(*testing.T) *intent.Intent { return intentFor("refund", `{"amount":30,"order_id":"o-1"}`, 2) }
	good := func(t *testing.T) *intent.Intent { return signed(t, "k1", signingKeys["k1"]) }
	unknownKey := func(t *testing.T) *intent.Intent { return signed(t, "k9", signingKeys["k1"]) }
	tampered := func(t *testing.T) *intent.Intent {
		in := good(t)
		in.ArgsJSON = []byte(`{"amount":30000,"order_id":"o-1"}`)
		return in
	}
	wrongKey := func(t *testing.T) *intent.Intent { return signed(t, "k1", []byte("not the key the effector holds")) }
	noID := func(*testing.T) *intent.Intent {
		in := intentFor("refund", `{"amount":30,"order_id":"o-1"}`, 2)
		in.ID = ""
		return in
	}

	tests := []struct {
		name   string
		mode   effector.VerifyMode
		intent func(*testing.T) *intent.Intent
		refuse error // the reason, or nil when the intent executes
	}{
		{"require refuses an unsigned intent", effector.VerifyRequire, unsigned, intent.ErrUnsigned},
		{"require refuses an intent signed with an unknown key", effector.VerifyRequire, unknownKey, intent.ErrUnknownKey},
		{"require refuses a tampered intent", effector.VerifyRequire, tampered, intent.ErrBadSignature},
		{"require refuses an intent signed with another key under a known id", effector.VerifyRequire, wrongKey, intent.ErrBadSignature},
		{"require executes a correctly signed intent", effector.VerifyRequire, good, nil},
		{"permissive executes an unsigned intent", effector.VerifyPermissive, unsigned, nil},
		{"permissive refuses an intent signed with an unknown key", effector.VerifyPermissive, unknownKey, intent.ErrUnknownKey},
		{"permissive refuses a tampered intent", effector.VerifyPermissive, tampered, intent.ErrBadSignature},
		{"permissive executes a correctly signed intent", effector.VerifyPermissive, good, nil},
		{"off executes a tampered intent", effector.VerifyOff, tampered, nil},
		{"off refuses an intent without an id", effector.VerifyOff, noID, effector.ErrMalformedIntent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := newTools(t)
			store := &countingStore{DedupStore: effector.NewMemoryStore()}
			var dead []error
			e := newEffector(t, tl, store,
				effector.WithVerify(tt.mode, signingKeys),
				effector.WithDeadLetter(func(_ context.Context, in *intent.Intent, reason error) error {
					dead = append(dead, reason)
					return nil
				}))
			res, err := e.Process(testCtx(t), tt.intent(t))
			if tt.refuse == nil {
				if err != nil || res.Status != intent.StatusOK {
					t.Fatalf("Process = %s, %v; want OK", res.Status, err)
				}
				if len(dead) != 0 {
					t.Errorf("dead-lettered %v, want nothing", dead)
				}
				return
			}
			var re *effector.RefusedError
			if !errors.As(err, &re) || !errors.Is(err, tt.refuse) {
				t.Fatalf("Process error = %v, want a *effector.RefusedError for %v", err, tt.refuse)
			}
			if diff := cmp.Diff(intent.Result{}, res, ignoreUnexported); diff != "" {
				t.Errorf("a refused intent has a result (-want +got):\n%s", diff)
			}
			if len(dead) != 1 || !errors.Is(dead[0], tt.refuse) {
				t.Errorf("dead-letter sink got %v, want one %v", dead, tt.refuse)
			}
			if n := store.touched(); n != 0 {
				t.Errorf("the store was called %d times for a refused intent, want 0", n)
			}
			if n := tl.calls.Load(); n != 0 {
				t.Errorf("the function was invoked %d times for a refused intent, want 0", n)
			}
		})
	}
}

func TestARefusedIntentReportsAFailingDeadLetterSink(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	sinkErr := errors.New("queue full")
	e := newEffector(t, tl, effector.NewMemoryStore(),
		effector.WithVerify(effector.VerifyRequire, signingKeys),
		effector.WithDeadLetter(func(context.Context, *intent.Intent, error) error { return sinkErr }))
	_, err := e.Process(testCtx(t), intentFor("refund", `{}`, 2))
	var re *effector.RefusedError
	if !errors.As(err, &re) || re.SinkErr != sinkErr || !errors.Is(err, intent.ErrUnsigned) || !errors.Is(err, sinkErr) {
		t.Fatalf("Process error = %v, want a *RefusedError for an unsigned intent carrying the sink's error", err)
	}
}

func TestProcessRejectsWithoutInvokingTheFunction(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		intent  *intent.Intent
		wantMsg string
	}{
		{"an unknown tool is rejected", intentFor("refnud", `{}`, 2), `no tool named "refnud" (did you mean "refund"?)`},
		{"a read-only tool is rejected", intentFor("lookup", `{}`, 2), `tool "lookup" is read-only`},
		{"a tool with no function is rejected", intentFor("unbound", `{}`, 2), `tool "unbound" has no function`},
		{"malformed JSON is rejected", intentFor("refund", `{"order_id":"o-1",`, 2), "malformed JSON"},
		{"arguments of the wrong type are rejected", intentFor("refund", `{"order_id":"o-1","amount":"lots"}`, 2), "/amount"},
		{"a missing argument is rejected", intentFor("refund", `{"amount":5}`, 2), "order_id"},
		{"an argument below its minimum is rejected", intentFor("refund", `{"order_id":"o-1","amount":0}`, 2), "/amount"},
		{"an unknown argument is rejected", intentFor("refund", `{"order_id":"o-1","amount":5,"refund_all":true}`, 2), "refund_all"},
		{"an intent of an unknown kind is rejected", func() *intent.Intent {
			in := intentFor("refund", `{"order_id":"o-1","amount":5}`, 2)
			in.Kind = 9
			return in
		}(), "kind 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := newTools(t)
			store := &countingStore{DedupStore: effector.NewMemoryStore()}
			e := newEffector(t, tl, store)
			res, err := e.Process(testCtx(t), tt.intent)
			if err != nil {
				t.Fatalf("Process: %v", err)
			}
			if res.Status != intent.StatusRejected || !strings.Contains(res.ErrorMessage, tt.wantMsg) {
				t.Errorf("Process = %s %q, want REJECTED saying %q", res.Status, res.ErrorMessage, tt.wantMsg)
			}
			wantIdentity(t, res, tt.intent)
			if n := tl.calls.Load(); n != 0 {
				t.Errorf("the function was invoked %d times, want 0", n)
			}
			// REJECTED is terminal: a redelivery gets the same bytes from the store.
			again, err := e.Process(testCtx(t), tt.intent)
			if err != nil {
				t.Fatalf("second Process: %v", err)
			}
			if !bytes.Equal(marshal(t, res), marshal(t, again)) {
				t.Errorf("redelivered REJECTED intent got a different result:\n first %+v\nsecond %+v", res, again)
			}
			if n := store.completes.Load(); n != 1 {
				t.Errorf("Complete called %d times, want 1", n)
			}
		})
	}
}

func TestProcessReportsAFunctionThatRanAndFailedAsError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tool    string
		wantMsg string
	}{
		{"a function that returns an error is ERROR", "fail", "payment provider said no"},
		{"a function that panics is ERROR", "boom", `tool "boom" panicked: nil map in refund path`},
		{"a function that outlives its timeout is ERROR", "stuck", `tool "stuck" did not return within its timeout of 30ms`},
		{"a function that returns something JSON cannot encode is ERROR", "nan", `tool "nan" ran, but its result cannot be encoded as JSON`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := newTools(t)
			store := effector.NewMemoryStore()
			e := newEffector(t, tl, store, effector.WithToolTimeout("stuck", 30*time.Millisecond))
			in := intentFor(tt.tool, `{}`, 2)
			ctx := testCtx(t)
			if tt.tool == "stuck" {
				// "stuck" ignores its context. Its outcome must be in the store
				// while it still runs, before its lease could end; only then
				// does the test let it return.
				go func() {
					waitFor(t, func() bool { return tl.calls.Load() > 0 })
					waitFor(t, func() bool {
						c, err := store.Claim(context.Background(), in.ID, effector.CallOf(in), time.Minute)
						return err == nil && c.State == effector.Done
					})
					close(tl.release)
				}()
			}
			res, err := e.Process(ctx, in)
			if err != nil {
				t.Fatalf("Process: %v", err)
			}
			if res.Status != intent.StatusError || !strings.Contains(res.ErrorMessage, tt.wantMsg) {
				t.Errorf("Process = %s %q, want ERROR saying %q", res.Status, res.ErrorMessage, tt.wantMsg)
			}
			wantIdentity(t, res, in)
			if len(res.Payload) != 0 {
				t.Errorf("ERROR result has payload %q", res.Payload)
			}
			// It ran, so its effect is unknown: it is never run again.
			again, err := e.Process(testCtx(t), in)
			if err != nil {
				t.Fatalf("second Process: %v", err)
			}
			if !bytes.Equal(marshal(t, res), marshal(t, again)) {
				t.Errorf("redelivered ERROR intent got a different result:\n first %+v\nsecond %+v", res, again)
			}
			if n := tl.calls.Load(); n != 1 {
				t.Errorf("the function was invoked %d times, want 1", n)
			}
		})
	}
}

// wantIdentity checks that res names its intent and the effector's clock, as
// every result must, whatever its status: a result the pipeline cannot match
// to its intent is a lost answer.
func wantIdentity(t *testing.T, res intent.Result, in *intent.Intent) {
	t.Helper()
	if res.IntentID != in.ID || !bytes.Equal(res.EntityKey, in.EntityKey) || res.Seq != in.Seq || res.CompletedAtMs != t0.UnixMilli() {
		t.Errorf("%s result does not identify its intent: got (%q, %q, seq %d, completed %d), want (%q, %q, seq %d, completed %d)",
			res.Status, res.IntentID, res.EntityKey, res.Seq, res.CompletedAtMs, in.ID, in.EntityKey, in.Seq, t0.UnixMilli())
	}
}

// waitFor polls cond until it holds, for at most 10 seconds.
func waitFor(t testing.TB, cond func() bool) {
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("waited 10s for a condition that never held")
			return
		}
	}
}

func TestSixteenGoroutinesProcessingOneIntentInvokeTheFunctionOnce(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	tl.hold = 20 * time.Millisecond // long enough that the others find it in flight
	e := newEffector(t, tl, effector.NewMemoryStore(), effector.WithBackoff(time.Millisecond, 10*time.Millisecond))
	in := intentFor("refund", `{"order_id":"o-1","amount":30}`, 2)

	const n = 16
	results := make([][]byte, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			res, err := e.Process(testCtx(t), in)
			errs[i] = err
			if err == nil {
				results[i] = marshal(t, res)
			}
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: Process: %v", i, errs[i])
		}
		if !bytes.Equal(results[i], results[0]) {
			t.Errorf("goroutine %d got a different result than goroutine 0", i)
		}
	}
	var first intent.Result
	if err := first.UnmarshalBinary(results[0]); err != nil || first.Status != intent.StatusOK {
		t.Fatalf("result = %+v, %v; want OK", first, err)
	}
	if got := tl.calls.Load(); got != 1 {
		t.Errorf("the function was invoked %d times by %d goroutines, want 1", got, n)
	}
}

func TestADoneIntentIsRepublishedByteIdentical(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	store := effector.NewMemoryStore()
	var now atomic.Int64
	now.Store(t0.UnixMilli())
	e := newEffector(t, tl, store, effector.WithClock(func() time.Time { return time.UnixMilli(now.Load()) }))
	in := intentFor("refund", `{"order_id":"o-1","amount":30}`, 2)

	first, err := e.Process(testCtx(t), in)
	if err != nil {
		t.Fatal(err)
	}
	now.Add(5000) // a redelivery comes later, still before the intent expires
	again := intentFor("refund", `{"order_id":"o-1","amount":30}`, 2)
	again.Attempt = 2
	second, err := e.Process(testCtx(t), again)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(marshal(t, first), marshal(t, second)) {
		t.Errorf("republished result differs:\n first %+v\nsecond %+v", first, second)
	}
	if second.CompletedAtMs != t0.UnixMilli() {
		t.Errorf("republished completed_at_ms = %d, want the first completion's %d", second.CompletedAtMs, t0.UnixMilli())
	}
	c, err := store.Claim(context.Background(), in.ID, effector.CallOf(in), time.Minute)
	if err != nil || c.State != effector.Done || !bytes.Equal(c.Result, marshal(t, first)) {
		t.Errorf("the store holds %s %q, want done with the published bytes", c.State, c.Result)
	}
	if n := tl.calls.Load(); n != 1 {
		t.Errorf("the function was invoked %d times, want 1", n)
	}
}

func TestProcessWaitsForTheWorkerThatHoldsTheIntent(t *testing.T) {
	t.Parallel()
	in := intentFor("refund", `{"order_id":"o-1","amount":30}`, 2)
	fast := effector.WithBackoff(time.Millisecond, 5*time.Millisecond)

	t.Run("it returns the other worker's result once it completes", func(t *testing.T) {
		t.Parallel()
		tl := newTools(t)
		store := effector.NewMemoryStore()
		c, _ := store.Claim(context.Background(), in.ID, effector.CallOf(in), time.Minute)
		theirs := marshal(t, intent.Result{IntentID: in.ID, EntityKey: entityKey, Seq: 7, Status: intent.StatusOK, Payload: []byte(`"theirs"`), CompletedAtMs: 1})
		go func() {
			time.Sleep(20 * time.Millisecond)
			store.Complete(context.Background(), in.ID, c.Token, theirs, time.Minute)
		}()
		res, err := newEffector(t, tl, store, fast).Process(testCtx(t), in)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(marshal(t, res), theirs) {
			t.Errorf("Process = %+v, want the other worker's result", res)
		}
		if n := tl.calls.Load(); n != 0 {
			t.Errorf("the function was invoked %d times, want 0", n)
		}
	})
	t.Run("it executes once the other worker's lease runs out", func(t *testing.T) {
		t.Parallel()
		tl := newTools(t)
		store := effector.NewMemoryStore()
		store.Claim(context.Background(), in.ID, effector.CallOf(in), 20*time.Millisecond) // a worker that died
		res, err := newEffector(t, tl, store, fast).Process(testCtx(t), in)
		if err != nil || res.Status != intent.StatusOK {
			t.Fatalf("Process = %s, %v; want OK", res.Status, err)
		}
		if n := tl.calls.Load(); n != 1 {
			t.Errorf("the function was invoked %d times, want 1", n)
		}
		// The dead worker may have run the tool: the function is told, and the
		// result says the effect is unknown.
		if !strings.HasPrefix(res.ErrorMessage, "effect unknown: an earlier attempt claimed this intent") {
			t.Errorf("ErrorMessage = %q, want it to say the effect is unknown", res.ErrorMessage)
		}
		if len(tl.intents) != 1 || !tl.intents[0].Reclaimed {
			t.Errorf("IntentFrom in the function = %+v, want Reclaimed", tl.intents)
		}
	})
	t.Run("a released claim is not reclaimed: nothing of it is unknown", func(t *testing.T) {
		t.Parallel()
		tl := newTools(t)
		store := effector.NewMemoryStore()
		c, _ := store.Claim(context.Background(), in.ID, effector.CallOf(in), time.Minute)
		if err := store.Release(context.Background(), in.ID, c.Token); err != nil {
			t.Fatal(err)
		}
		res, err := newEffector(t, tl, store, fast).Process(testCtx(t), in)
		if err != nil || res.Status != intent.StatusOK || res.ErrorMessage != "" {
			t.Fatalf("Process = %s %q, %v; want OK with no message", res.Status, res.ErrorMessage, err)
		}
		if len(tl.intents) != 1 || tl.intents[0].Reclaimed {
			t.Errorf("IntentFrom in the function = %+v, want not Reclaimed", tl.intents)
		}
	})
	t.Run("it gives up when its context ends, with no result", func(t *testing.T) {
		t.Parallel()
		tl := newTools(t)
		store := effector.NewMemoryStore()
		store.Claim(context.Background(), in.ID, effector.CallOf(in), time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		res, err := newEffector(t, tl, store, fast).Process(ctx, in)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Process error = %v, want context.DeadlineExceeded", err)
		}
		if res.Status != intent.StatusUnspecified {
			t.Errorf("Process gave a %s result while another worker holds the intent", res.Status)
		}
		if n := tl.calls.Load(); n != 0 {
			t.Errorf("the function was invoked %d times, want 0", n)
		}
	})
}

func TestApprovalIntentsGoToTheApprovalSinkOnce(t *testing.T) {
	t.Parallel()
	approval := func() *intent.Intent {
		in := intentFor("approval", `{"amount":9000,"reason":"refund"}`, 3)
		in.Kind = intent.KindApproval
		return in
	}
	t.Run("the sink gets it once and it is never executed", func(t *testing.T) {
		t.Parallel()
		tl := newTools(t)
		var asked []string
		e := newEffector(t, tl, effector.NewMemoryStore(), effector.WithApproval(func(_ context.Context, in *intent.Intent) error {
			asked = append(asked, in.ID)
			return nil
		}))
		first, err := e.Process(testCtx(t), approval())
		if err != nil {
			t.Fatal(err)
		}
		second, err := e.Process(testCtx(t), approval())
		if err != nil {
			t.Fatal(err)
		}
		if first.Status != intent.StatusOK || !strings.HasPrefix(string(first.Payload), `{"approval":"requested",`) ||
			!strings.Contains(string(first.Payload), `"execution_id":"`+intent.ExecutionID(first.IntentID)+`"`) {
			t.Errorf("Process = %s %q, want OK {\"approval\":\"requested\",... naming its execution id}", first.Status, first.Payload)
		}
		if !bytes.Equal(marshal(t, first), marshal(t, second)) {
			t.Errorf("the redelivered approval got a different result")
		}
		if want := []string{approval().ID}; !cmp.Equal(asked, want) {
			t.Errorf("approval sink got %v, want %v once", asked, want)
		}
		if n := tl.calls.Load(); n != 0 {
			t.Errorf("a function was invoked %d times for an approval, want 0", n)
		}
	})
	t.Run("a failing sink leaves it to be asked again", func(t *testing.T) {
		t.Parallel()
		tl := newTools(t)
		var calls int
		e := newEffector(t, tl, effector.NewMemoryStore(), effector.WithApproval(func(context.Context, *intent.Intent) error {
			if calls++; calls == 1 {
				return errors.New("approvals service down")
			}
			return nil
		}))
		if _, err := e.Process(testCtx(t), approval()); err == nil || !strings.Contains(err.Error(), "approvals service down") {
			t.Fatalf("Process error = %v, want the sink's error", err)
		}
		res, err := e.Process(testCtx(t), approval())
		if err != nil || res.Status != intent.StatusOK || calls != 2 {
			t.Fatalf("Process after the sink recovered = %s, %v (sink called %d times); want OK after 2 calls", res.Status, err, calls)
		}
	})
	t.Run("with no sink it is rejected", func(t *testing.T) {
		t.Parallel()
		res, err := newEffector(t, newTools(t), effector.NewMemoryStore()).Process(testCtx(t), approval())
		if err != nil || res.Status != intent.StatusRejected || !strings.Contains(res.ErrorMessage, "WithApproval") {
			t.Fatalf("Process = %s %q, %v; want REJECTED naming WithApproval", res.Status, res.ErrorMessage, err)
		}
	})
}

// failingStore fails every Claim.
type failingStore struct{ effector.DedupStore }

func (failingStore) Claim(context.Context, string, effector.Call, time.Duration) (effector.Claim, error) {
	return effector.Claim{}, errors.New("connection refused")
}

func TestAStoreFailureGivesNoResultAndRunsNothing(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	_, err := newEffector(t, tl, failingStore{}).Process(testCtx(t), intentFor("refund", `{"order_id":"o-1","amount":30}`, 2))
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Process error = %v, want the store's error", err)
	}
	if n := tl.calls.Load(); n != 0 {
		t.Errorf("the function was invoked %d times, want 0", n)
	}
}

func TestAStoredResultThatDoesNotDecodeGivesNoResultAndRunsNothing(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	store := effector.NewMemoryStore()
	in := intentFor("refund", `{"order_id":"o-1","amount":30}`, 2)
	c, err := store.Claim(context.Background(), in.ID, effector.CallOf(in), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Complete(context.Background(), in.ID, c.Token, []byte("\xff not a result"), time.Hour); err != nil {
		t.Fatal(err)
	}
	res, err := newEffector(t, tl, store).Process(testCtx(t), in)
	if err == nil || !strings.Contains(err.Error(), "is not a ToolResult") || res.Status != intent.StatusUnspecified {
		t.Errorf("Process = %s, %v; want no result and an error saying the stored one is not a ToolResult", res.Status, err)
	}
	if n := tl.calls.Load(); n != 0 {
		t.Errorf("the function was invoked %d times, want 0", n)
	}
}

func TestNewRefusesAConfigurationThatCouldExecuteAnIntentTwice(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	store := effector.NewMemoryStore()
	tests := []struct {
		name  string
		table *registry.Registry
		store effector.DedupStore
		opts  []effector.Option
		want  string
	}{
		{"a lease equal to the timeout is refused", tl.table, store,
			[]effector.Option{effector.WithLease(time.Second), effector.WithTimeout(time.Second)},
			"lease 1s does not exceed the tool timeout 1s"},
		{"a lease below one tool's timeout is refused", tl.table, store,
			[]effector.Option{effector.WithLease(time.Minute), effector.WithTimeout(time.Second), effector.WithToolTimeout("refund", 2*time.Minute)},
			`lease 1m0s does not exceed the timeout 2m0s of tool "refund"`},
		{"a timeout for a tool the table does not hold is refused", tl.table, store,
			[]effector.Option{effector.WithToolTimeout("refnud", time.Second)},
			`WithToolTimeout("refnud"): toolreg: no tool named "refnud" (did you mean "refund"?)`},
		{"requiring signatures with no keys is refused", tl.table, store,
			[]effector.Option{effector.WithVerify(effector.VerifyRequire, nil)},
			"signature mode require with no keys"},
		{"an empty signing key is refused", tl.table, store,
			[]effector.Option{effector.WithVerify(effector.VerifyPermissive, map[string][]byte{"k1": nil})},
			`signing key "k1" is empty`},
		{"a zero result time-to-live is refused", tl.table, store,
			[]effector.Option{effector.WithResultTTL(0)}, "WithResultTTL is 0s"},
		{"a nil store is refused", tl.table, nil, nil, "the dedup store is nil"},
		{"a nil table is refused", nil, store, nil, "the effect table is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := effector.New(tt.table, tt.store, tt.opts...)
			var ce *effector.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want a *effector.ConfigError saying %q", err, tt.want)
			}
			if e != nil {
				t.Errorf("New returned an Effector along with its error")
			}
		})
	}
}

func TestProcessLogsNoArguments(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	var buf syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := newEffector(t, tl, effector.NewMemoryStore(), effector.WithLogger(logger),
		effector.WithVerify(effector.VerifyRequire, signingKeys))
	secret := "card-4242-4242"
	e.Process(testCtx(t), intentFor("refund", `{"order_id":"`+secret+`","amount":30}`, 2)) // refused: unsigned
	e2 := newEffector(t, tl, effector.NewMemoryStore(), effector.WithLogger(logger))
	e2.Process(testCtx(t), intentFor("refund", `{"order_id":"`+secret+`","amount":30}`, 3))
	e2.Process(testCtx(t), intentFor("refund", `{"order_id":"`+secret+`","amount":"x"}`, 4))
	log := buf.String()
	if !strings.Contains(log, "intent_id=") {
		t.Fatalf("nothing was logged at debug level:\n%s", log)
	}
	if strings.Contains(log, secret) {
		t.Errorf("the log holds an argument value:\n%s", log)
	}
}

// testCtx bounds a Process call so that a regression that waits forever
// fails in seconds.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestAFunctionThatHonoursItsContextSeesItsTimeoutAsTheDeadline(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	e := newEffector(t, tl, effector.NewMemoryStore(), effector.WithToolTimeout("patient", 30*time.Millisecond))
	start := time.Now()
	res, err := e.Process(testCtx(t), intentFor("patient", `{}`, 2))
	if err != nil || res.Status != intent.StatusError || !strings.Contains(res.ErrorMessage, "did not return within its timeout of 30ms") {
		t.Fatalf("Process = %s %q, %v; want ERROR for the timeout", res.Status, res.ErrorMessage, err)
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if !tl.hadDeadline || tl.sawDeadline.Before(start) || tl.sawDeadline.After(start.Add(time.Second)) {
		t.Errorf("the function's ctx.Deadline() = %v, %v; want about 30ms after %v", tl.sawDeadline, tl.hadDeadline, start)
	}
	if tl.sawErr != context.DeadlineExceeded {
		t.Errorf("the function's ctx.Err() = %v, want context.DeadlineExceeded", tl.sawErr)
	}
	var te *effector.TimeoutError
	if !errors.As(tl.sawCause, &te) || te.Tool != "patient" || te.Timeout != 30*time.Millisecond {
		t.Errorf("context.Cause in the function = %v, want *effector.TimeoutError for patient after 30ms", tl.sawCause)
	}
}

func TestAnIntentThatExpiresWhileWaitingForAnotherWorkerIsExpiredNotRun(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	// The store has its own clock, so the dead worker's lease ends only when
	// the test says: a wall-clock lease could run out on a loaded machine
	// before Process first claims, and the intent would run unwaited.
	var storeNow atomic.Int64
	storeNow.Store(t0.UnixMilli())
	store := effector.NewMemoryStore(effector.WithStoreClock(func() time.Time { return time.UnixMilli(storeNow.Load()) }))
	var now atomic.Int64
	now.Store(t0.UnixMilli())
	var e *effector.Effector
	in := intentFor("refund", `{"order_id":"o-1","amount":30}`, 2)
	store.Claim(context.Background(), in.ID, effector.CallOf(in), time.Minute) // a worker that then dies
	hooked := &hookStore{DedupStore: store, onInFlight: func() {
		now.Store(in.ExpiresAtMs)                      // the intent expires while Process waits
		storeNow.Add((2 * time.Minute).Milliseconds()) // and the dead worker's lease runs out
	}}
	e = newEffector(t, tl, hooked,
		effector.WithClock(func() time.Time { return time.UnixMilli(now.Load()) }),
		effector.WithBackoff(time.Millisecond, 5*time.Millisecond))
	res, err := e.Process(testCtx(t), in)
	if err != nil || res.Status != intent.StatusExpired {
		t.Fatalf("Process = %s %q, %v; want EXPIRED", res.Status, res.ErrorMessage, err)
	}
	if n := tl.calls.Load(); n != 0 {
		t.Errorf("the function was invoked %d times, want 0", n)
	}
	c, err := store.Claim(context.Background(), in.ID, effector.CallOf(in), time.Minute)
	if err != nil || c.State != effector.Done || !bytes.Equal(c.Result, marshal(t, res)) {
		t.Errorf("the store holds %s, want the EXPIRED result recorded", c.State)
	}
}

// hookStore calls onInFlight each time a Claim finds the intent in flight.
type hookStore struct {
	effector.DedupStore
	onInFlight func()
}

func (s *hookStore) Claim(ctx context.Context, id string, call effector.Call, lease time.Duration) (effector.Claim, error) {
	c, err := s.DedupStore.Claim(ctx, id, call, lease)
	if err == nil && c.State == effector.InFlight {
		s.onInFlight()
	}
	return c, err
}

func TestConcurrentExecutionsTimeOutEachAtItsOwnTimeout(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	store := effector.NewMemoryStore()
	e := newEffector(t, tl, store,
		effector.WithToolTimeout("patient", 20*time.Millisecond),
		effector.WithToolTimeout("stuck", 60*time.Millisecond))
	intents := []*intent.Intent{
		intentFor("stuck", `{}`, 1),
		intentFor("patient", `{}`, 2),
		intentFor("patient", `{}`, 3),
		intentFor("refund", `{"order_id":"o-1","amount":30}`, 4),
	}
	want := []string{"timeout of 60ms", "timeout of 20ms", "timeout of 20ms", ""}
	// "stuck" ignores its context: let it go once its ERROR is recorded.
	go func() {
		waitFor(t, func() bool { return tl.started(intents[0].ID) })
		waitFor(t, func() bool {
			c, err := store.Claim(context.Background(), intents[0].ID, effector.CallOf(intents[0]), time.Minute)
			return err == nil && c.State == effector.Done
		})
		close(tl.release)
	}()
	results := make([]intent.Result, len(intents))
	var wg sync.WaitGroup
	for i, in := range intents {
		wg.Go(func() {
			res, err := e.Process(testCtx(t), in)
			if err != nil {
				t.Errorf("Process(%s): %v", in.ToolName, err)
			}
			results[i] = res
		})
	}
	wg.Wait()
	for i, res := range results {
		wantStatus := intent.StatusError
		if want[i] == "" {
			wantStatus = intent.StatusOK
		}
		if res.Status != wantStatus || !strings.Contains(res.ErrorMessage, want[i]) {
			t.Errorf("intent %d (%s): %s %q, want %s saying %q", i, intents[i].ToolName, res.Status, res.ErrorMessage, wantStatus, want[i])
		}
	}
}

func TestProcessRefusesANilIntentWithoutPanicking(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	store := &countingStore{DedupStore: effector.NewMemoryStore()}
	if _, err := newEffector(t, tl, store).Process(testCtx(t), nil); err == nil || !strings.Contains(err.Error(), "nil intent") {
		t.Errorf("Process(nil) error = %v, want one saying the intent is nil", err)
	}
	if store.touched() != 0 {
		t.Errorf("the store was called for a nil intent")
	}
}

// lateOwner is an effector over a memory store whose clock the tool moves:
// its one tool, "late", runs stall (with the store and the clock) as the
// owner whose lease ends while it runs, and returns result. calls counts
// its runs.
func lateOwner(t *testing.T, result string, stall func(store *effector.MemoryStore, in *intent.Intent, now *atomic.Int64)) (e *effector.Effector, store *effector.MemoryStore, in *intent.Intent, calls *int) {
	t.Helper()
	var now atomic.Int64
	now.Store(t0.UnixNano())
	store = effector.NewMemoryStore(effector.WithStoreClock(func() time.Time { return time.Unix(0, now.Load()) }))
	in = intentFor("late", `{}`, 9)
	b := bindings.New([]*toolreg.Spec{spec("late", true)})
	calls = new(int)
	bindings.Effect(b, "late", func(ctx context.Context, _ noArgs) (string, error) {
		*calls++
		stall(store, in, &now)
		return result, nil
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	e, err = effector.New(bound.Effector, store, effector.WithClock(fixedClock), effector.WithLogger(quietLogger()),
		effector.WithLease(time.Minute), effector.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return e, store, in, calls
}

// otherOwnerClaims claims in for another owner, once this one's lease
// ended, and fails t unless the claim is Claimed and Reclaimed.
func otherOwnerClaims(t *testing.T, store *effector.MemoryStore, in *intent.Intent) effector.Claim {
	c, err := store.Claim(context.Background(), in.ID, effector.CallOf(in), time.Minute)
	if err != nil || c.State != effector.Claimed || !c.Reclaimed {
		t.Errorf("the other worker's claim = %+v, %v; want Claimed and Reclaimed", c, err)
	}
	return c
}

// A paused owner wakes after its lease ran out and another owner completed
// the intent: its own result is refused by the store, and Process returns the
// stored one, so the intent never has two different results.
func TestALateOwnerReturnsTheStoredResultNotItsOwn(t *testing.T) {
	t.Parallel()
	var other intent.Result
	e, _, in, calls := lateOwner(t, "the late owner's", func(store *effector.MemoryStore, in *intent.Intent, now *atomic.Int64) {
		// The owner stalls past its lease; another worker claims and completes.
		now.Add(int64(time.Hour))
		c := otherOwnerClaims(t, store, in)
		other = intent.Result{IntentID: in.ID, EntityKey: entityKey, Seq: 7, Status: intent.StatusOK, Payload: []byte(`"the other owner's"`), CompletedAtMs: 1}
		if err := store.Complete(context.Background(), in.ID, c.Token, marshal(t, other), time.Hour); err != nil {
			t.Errorf("the other worker's Complete: %v", err)
		}
	})
	got, err := e.Process(testCtx(t), in)
	if err != nil {
		t.Fatalf("Process: %v", err)
	}
	if diff := cmp.Diff(other, got, ignoreUnexported); diff != "" {
		t.Errorf("Process returned (-stored +got):\n%s", diff)
	}
	if *calls != 1 {
		t.Errorf("the function ran %d times, want 1", *calls)
	}
}

// A paused owner wakes after its lease ran out and another owner claimed
// the intent (and may have run it) and stopped without a result: the late
// owner claims the intent again and records its own result, which must say
// "effect unknown", since the tool may have run twice. It said nothing.
func TestALateOwnerAfterAnotherOwnerStoppedRecordsEffectUnknown(t *testing.T) {
	t.Parallel()
	e, store, in, calls := lateOwner(t, "the late owner's", func(store *effector.MemoryStore, in *intent.Intent, now *atomic.Int64) {
		// The owner stalls past its lease; another worker claims, and stops
		// without completing; its lease lapses too.
		now.Add(int64(time.Hour))
		otherOwnerClaims(t, store, in)
		now.Add(int64(time.Hour))
	})
	got, err := e.Process(testCtx(t), in)
	if err != nil {
		t.Fatalf("Process: %v", err)
	}
	if got.Status != intent.StatusOK || string(got.Payload) != `"the late owner's"` || !strings.HasPrefix(got.ErrorMessage, "effect unknown") {
		t.Errorf("Process returned %v %s %q, want the late owner's OK marked effect unknown", got.Status, got.Payload, got.ErrorMessage)
	}
	var res intent.Result
	if err := res.UnmarshalBinary(storeState(t, store, in).Result); err != nil || !strings.HasPrefix(res.ErrorMessage, "effect unknown") {
		t.Errorf("the store holds %q (%v), want it marked effect unknown", res.ErrorMessage, err)
	}
	if *calls != 1 {
		t.Errorf("the function ran %d times here, want 1", *calls)
	}
}

// A late owner whose claim lapsed while only it ran the tool, and whom no
// other owner claimed the intent from in between, records its result as
// it is: its claim again is Reclaimed (its own lapsed claim), with one
// attempt more, which says nothing of another owner.
func TestALateOwnerAloneDoesNotMarkItsResult(t *testing.T) {
	t.Parallel()
	e, _, in, calls := lateOwner(t, "only mine", func(_ *effector.MemoryStore, _ *intent.Intent, now *atomic.Int64) {
		now.Add(int64(time.Hour)) // this owner stalls past its lease; no one else claims
	})
	got, err := e.Process(testCtx(t), in)
	if err != nil {
		t.Fatal(err)
	}
	if *calls != 1 || got.Status != intent.StatusOK || got.ErrorMessage != "" {
		t.Errorf("ran %d time(s), by this owner only; result %v %q, want OK with no note", *calls, got.Status, got.ErrorMessage)
	}
}

// TestProcessRunsItsPhasesInOrder: issue 4's order is verify, expiry, claim,
// resolve and validate, execute. An intent that fails two phases gets the
// earlier phase's answer: a bad signature wins over expiry (no result, dead
// letter), expiry wins over an unknown tool or bad arguments (EXPIRED, the
// store untouched), and a stored result wins over arguments the current
// table would reject (the stored bytes, nothing resolved).
func TestProcessRunsItsPhasesInOrder(t *testing.T) {
	t.Parallel()
	expired := func(in *intent.Intent) *intent.Intent { in.ExpiresAtMs = t0.UnixMilli() - 1; return in }

	t.Run("an unsigned expired intent is refused, not EXPIRED", func(t *testing.T) {
		t.Parallel()
		tl := newTools(t)
		store := &countingStore{DedupStore: effector.NewMemoryStore()}
		var dead []error
		e := newEffector(t, tl, store, effector.WithVerify(effector.VerifyRequire, signingKeys),
			effector.WithDeadLetter(func(_ context.Context, _ *intent.Intent, reason error) error {
				dead = append(dead, reason)
				return nil
			}))
		res, err := e.Process(testCtx(t), expired(intentFor("refund", `{"order_id":"o-1","amount":30}`, 2)))
		if !errors.Is(err, intent.ErrUnsigned) || res.Status != intent.StatusUnspecified || len(dead) != 1 {
			t.Errorf("Process = %s, %v (dead letters %v); want a refusal for the missing signature, no result", res.Status, err, dead)
		}
		if n := store.touched(); n != 0 {
			t.Errorf("the store was called %d times, want 0", n)
		}
	})
	for _, in := range []*intent.Intent{
		expired(intentFor("refnud", `{}`, 2)),
		expired(intentFor("refund", `{"order_id":`, 3)),
		expired(intentFor("lookup", `{}`, 4)),
	} {
		t.Run("an expired intent that would be rejected ("+in.ToolName+" "+string(in.ArgsJSON)+") is EXPIRED", func(t *testing.T) {
			t.Parallel()
			tl := newTools(t)
			store := &countingStore{DedupStore: effector.NewMemoryStore()}
			res, err := newEffector(t, tl, store).Process(testCtx(t), in)
			if err != nil || res.Status != intent.StatusExpired {
				t.Errorf("Process = %s %q, %v; want EXPIRED", res.Status, res.ErrorMessage, err)
			}
			if n := store.touched(); n != 0 {
				t.Errorf("the store was called %d times, want 0", n)
			}
		})
	}
	t.Run("a done intent is answered from the store before its tool is resolved", func(t *testing.T) {
		t.Parallel()
		tl := newTools(t)
		store := effector.NewMemoryStore()
		in := intentFor("refnud", `{"order_id":`, 5) // unknown tool, malformed arguments
		c, err := store.Claim(context.Background(), in.ID, effector.CallOf(in), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		stored := marshal(t, intent.Result{IntentID: in.ID, EntityKey: entityKey, Seq: 7, Status: intent.StatusOK, Payload: []byte(`"done earlier"`), CompletedAtMs: 1})
		if err := store.Complete(context.Background(), in.ID, c.Token, stored, time.Hour); err != nil {
			t.Fatal(err)
		}
		res, err := newEffector(t, tl, store).Process(testCtx(t), in)
		if err != nil || !bytes.Equal(marshal(t, res), stored) {
			t.Errorf("Process = %+v, %v; want the stored result byte-identical", res, err)
		}
		if n := tl.calls.Load(); n != 0 {
			t.Errorf("a function was invoked %d times, want 0", n)
		}
	})
}
