package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/canonjson"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/toolbind"
	"github.com/beam-agents/toolreg/registry"
	"github.com/beam-agents/toolreg/runner"
)

// The activation tests use a support agent's two tools: lookup_order, read-only,
// and issue_refund, side-effecting, whose functions count their calls.

var actT0 = time.UnixMilli(1700000000000).UTC()

func actClock() time.Time { return actT0 }

func orderIDParam() *toolreg.Param {
	return &toolreg.Param{Name: "order_id", Schema: toolreg.Schema{Type: toolreg.TypeString, MinLength: new(1)}}
}

func lookupOrderSpec() *toolreg.Spec {
	return &toolreg.Spec{
		Name: "lookup_order", Description: "Look up an order.", Pos: toolreg.Pos{File: "lookup_order.yaml", Line: 1},
		Params: []*toolreg.Param{orderIDParam()},
	}
}

// refundParams are issue_refund's params; refundCheckSpec is a read-only twin
// with the same params, to compare Act's validation with the runner's.
func refundParams() []*toolreg.Param {
	return []*toolreg.Param{
		orderIDParam(),
		{Name: "amount", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Minimum: "1", Maximum: "10000"}},
		{Name: "reason", Schema: toolreg.Schema{Type: toolreg.TypeString, Default: "customer request", HasDefault: true}},
	}
}

func issueRefundSpec() *toolreg.Spec {
	return &toolreg.Spec{
		Name: "issue_refund", Description: "Refund an order.", SideEffect: true,
		Pos: toolreg.Pos{File: "issue_refund.yaml", Line: 1}, Params: refundParams(),
	}
}

func refundCheckSpec() *toolreg.Spec {
	return &toolreg.Spec{
		Name: "refund_check", Description: "Check a refund request.",
		Pos: toolreg.Pos{File: "refund_check.yaml", Line: 1}, Params: refundParams(),
	}
}

type OrderArgs struct {
	OrderID string `json:"order_id"`
}

type RefundRequest struct {
	OrderID string `json:"order_id"`
	Amount  int    `json:"amount"`
	Reason  string `json:"reason"`
}

type supportAgent struct {
	bound   *bindings.Bound
	lookups atomic.Int64
	refunds atomic.Int64
}

// newSupportAgent binds both tools in one process, as the example service
// does: the pipeline table gets issue_refund's contract only.
func newSupportAgent(t testing.TB) *supportAgent {
	t.Helper()
	s := &supportAgent{}
	b := bindings.New([]*toolreg.Spec{lookupOrderSpec(), issueRefundSpec(), refundCheckSpec()})
	bindings.ReadOnly(b, "lookup_order", func(_ context.Context, a OrderArgs) (string, error) {
		s.lookups.Add(1)
		return "order " + a.OrderID + ": shipped", nil
	})
	bindings.Effect(b, "issue_refund", func(_ context.Context, a RefundRequest) (bool, error) {
		s.refunds.Add(1)
		return true, nil
	})
	bindings.ReadOnly(b, "refund_check", func(_ context.Context, a RefundRequest) (RefundRequest, error) {
		return a, nil
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	s.bound = bound
	return s
}

func TestStagingDoesNotExecute(t *testing.T) {
	t.Parallel()
	t.Run("with the pipeline table bindings build", func(t *testing.T) {
		t.Parallel()
		s := newSupportAgent(t)
		a := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, runner.WithClock(actClock))
		in, err := a.Act("issue_refund", json.RawMessage(`{"order_id":"o-1","amount":"25"}`))
		if err != nil {
			t.Fatalf("Act: %v", err)
		}
		want := &intent.Intent{
			ID: intent.IntentID([]byte("cust-42"), 7, 0), EntityKey: []byte("cust-42"), Seq: 7, StepIndex: 0,
			ToolName: "issue_refund", ArgsJSON: json.RawMessage(`{"amount":25,"order_id":"o-1","reason":"customer request"}`),
			CreatedAtMs: 1700000000000, ExpiresAtMs: 1700000000000 + time.Hour.Milliseconds(), Kind: intent.KindTool,
		}
		if diff := cmp.Diff(want, in, cmp.AllowUnexported(intent.Intent{})); diff != "" {
			t.Errorf("staged intent (-want +got):\n%s", diff)
		}
		drained, err := a.Drain()
		if err != nil {
			t.Fatal(err)
		}
		if len(drained) != 1 || drained[0] == in {
			t.Errorf("Drain = %v; want the one staged intent, kept apart from the caller's copy", drained)
		} else if diff := cmp.Diff(want, drained[0], cmp.AllowUnexported(intent.Intent{})); diff != "" {
			t.Errorf("drained intent (-want +got):\n%s", diff)
		}
		if n := s.refunds.Load(); n != 0 {
			t.Errorf("issue_refund ran %d times; staging and draining must run nothing", n)
		}
	})
	t.Run("even when the table holds the function", func(t *testing.T) {
		t.Parallel()
		// A hand-made table that wrongly holds the effect's function: Act must
		// still only stage.
		var calls atomic.Int64
		count := func(context.Context, json.RawMessage) (any, error) { calls.Add(1); return true, nil }
		tool := toolbind.Attach(issueRefundSpec(), &toolbind.Binding{
			Func:   count,
			Decode: func(json.RawMessage) (any, error) { calls.Add(1); return nil, nil },
			Call:   count,
		}).(*toolreg.Tool)
		table := registry.New()
		if err := table.Register(tool); err != nil {
			t.Fatal(err)
		}
		a := runner.NewActivation(table, []byte("cust-42"), 7, runner.WithClock(actClock))
		if _, err := a.Act("issue_refund", json.RawMessage(`{"order_id":"o-1","amount":25}`)); err != nil {
			t.Fatalf("Act: %v", err)
		}
		if _, err := a.Drain(); err != nil {
			t.Fatal(err)
		}
		if n := calls.Load(); n != 0 {
			t.Errorf("the bound function or decoder was called %d times; want 0", n)
		}
	})
}

// activationScript is one activation's calls: a refund, a lookup, a second
// refund whose arguments are written differently each time they are played.
func activationScript(t *testing.T, pipeline *registry.Registry, seq int64, amount string) [][]byte {
	t.Helper()
	ctx := context.Background()
	a := runner.NewActivation(pipeline, []byte("cust-42"), seq, runner.WithClock(actClock))
	if _, err := a.Act("issue_refund", json.RawMessage(`{"order_id":"o-1","amount":25}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.RunTool(ctx, "lookup_order", json.RawMessage(`{"order_id":"o-2"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Act("issue_refund", json.RawMessage(`{ "amount": `+amount+`, "reason": "late", "order_id": "o-2" }`)); err != nil {
		t.Fatal(err)
	}
	intents, err := a.Drain()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, in := range intents {
		b, err := in.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func TestIntentIDsAreDeterministicAcrossAReplay(t *testing.T) {
	t.Parallel()
	first := activationScript(t, newSupportAgent(t).bound.Pipeline, 7, `10`)
	// The replay runs in a fresh process (a new binding), and the model wrote
	// the amount as a string this time: the canonical args are the same.
	replay := activationScript(t, newSupportAgent(t).bound.Pipeline, 7, `"10"`)
	if diff := cmp.Diff(first, replay); diff != "" {
		t.Errorf("a replay staged other bytes (-first +replay):\n%s", diff)
	}
	var ids []string
	for _, b := range first {
		var in intent.Intent
		if err := in.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, in.ID)
	}
	wantIDs := []string{intent.IntentID([]byte("cust-42"), 7, 0), intent.IntentID([]byte("cust-42"), 7, 1)}
	if diff := cmp.Diff(wantIDs, ids); diff != "" {
		t.Errorf("intent ids (-want +got):\n%s", diff)
	}

	next := activationScript(t, newSupportAgent(t).bound.Pipeline, 8, `10`)
	for i := range next {
		if bytes.Equal(next[i], first[i]) {
			t.Errorf("intent %d of seq 8 has the bytes of seq 7's", i)
		}
	}
}

func TestRunToolDoesNotAdvanceTheStep(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	a := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, runner.WithClock(actClock))
	ctx := context.Background()
	for range 3 {
		res, err := a.RunTool(ctx, "lookup_order", json.RawMessage(`{"order_id":"o-1"}`))
		if err != nil || res != "order o-1: shipped" {
			t.Fatalf("RunTool = %v, %v; want the lookup's result", res, err)
		}
	}
	if got := a.Step(); got != 0 {
		t.Errorf("after three RunTool calls Step() = %d; want 0", got)
	}
	in, err := a.Act("issue_refund", json.RawMessage(`{"order_id":"o-1","amount":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if in.StepIndex != 0 {
		t.Errorf("the first intent after three RunTool calls has step %d; want 0", in.StepIndex)
	}
	if _, err := a.RunTool(ctx, "lookup_order", json.RawMessage(`{"order_id":"o-1"}`)); err != nil {
		t.Fatal(err)
	}
	if got := a.Step(); got != 1 {
		t.Errorf("after one Act and a RunTool, Step() = %d; want 1", got)
	}
	if n := s.lookups.Load(); n != 4 {
		t.Errorf("lookup_order ran %d times; want 4, once per RunTool", n)
	}
}

func TestRunToolRefusesASideEffectingToolAndUnknownNames(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	a := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, runner.WithClock(actClock))
	_, err := a.RunTool(context.Background(), "issue_refund", json.RawMessage(`{"order_id":"o-1","amount":5}`))
	var se *toolreg.SideEffectToolError
	if !errors.As(err, &se) || se.Name != "issue_refund" {
		t.Errorf("RunTool(issue_refund) = %v; want a *SideEffectToolError", err)
	}
	_, err = a.RunTool(context.Background(), "lookup_ordr", nil)
	var nf *toolreg.ToolNotFoundError
	if !errors.As(err, &nf) || len(nf.DidYouMean) == 0 || nf.DidYouMean[0] != "lookup_order" {
		t.Errorf("RunTool(lookup_ordr) = %v; want a *ToolNotFoundError suggesting lookup_order", err)
	}
	if n := s.refunds.Load(); n != 0 {
		t.Errorf("issue_refund ran %d times; want 0", n)
	}
}

func TestDrainOnce(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	a := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, runner.WithClock(actClock))
	if _, err := a.Act("issue_refund", json.RawMessage(`{"order_id":"o-1","amount":5}`)); err != nil {
		t.Fatal(err)
	}
	first, err := a.Drain()
	if err != nil || len(first) != 1 {
		t.Fatalf("first Drain = %d intents, %v; want 1, nil", len(first), err)
	}
	second, err := a.Drain()
	if !errors.Is(err, runner.ErrDrained) || second != nil {
		t.Errorf("second Drain = %v, %v; want nil, ErrDrained", second, err)
	}
	if _, err := a.Act("issue_refund", json.RawMessage(`{"order_id":"o-2","amount":5}`)); !errors.Is(err, runner.ErrDrained) {
		t.Errorf("Act after Drain = %v; want ErrDrained", err)
	}

	empty := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 8, runner.WithClock(actClock))
	if got, err := empty.Drain(); err != nil || len(got) != 0 {
		t.Errorf("Drain of an activation that staged nothing = %v, %v; want no intents, nil", got, err)
	}
}

func TestActRefusesWithoutStaging(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	tests := []struct {
		name  string
		opts  []runner.ActivationOption
		tool  string
		args  string
		check func(t *testing.T, err error)
	}{
		{"an unknown name", nil, "issue_refnd", `{}`, func(t *testing.T, err error) {
			var e *toolreg.ToolNotFoundError
			if !errors.As(err, &e) || e.Name != "issue_refnd" {
				t.Errorf("got %v; want a *ToolNotFoundError", err)
			}
		}},
		{"a read-only tool", nil, "lookup_order", `{"order_id":"o-1"}`, func(t *testing.T, err error) {
			var e *toolreg.ReadOnlyToolError
			if !errors.As(err, &e) || e.Name != "lookup_order" {
				t.Errorf("got %v; want a *ReadOnlyToolError", err)
			}
		}},
		{"arguments that break the contract", nil, "issue_refund", `{"order_id":"","amount":0}`, func(t *testing.T, err error) {
			var e *toolreg.ToolArgumentError
			if !errors.As(err, &e) {
				t.Fatalf("got %v; want a *ToolArgumentError", err)
			}
			var paths []string
			for _, p := range e.Problems {
				paths = append(paths, p.Path)
			}
			if diff := cmp.Diff([]string{"/amount", "/order_id"}, paths); diff != "" {
				t.Errorf("failing paths (-want +got):\n%s", diff)
			}
		}},
		{"arguments that are not JSON", nil, "issue_refund", `{"order_id":`, func(t *testing.T, err error) {
			var e *toolreg.ToolArgumentError
			if !errors.As(err, &e) {
				t.Errorf("got %v; want a *ToolArgumentError", err)
			}
		}},
		{"an activation with no clock", []runner.ActivationOption{}, "issue_refund", `{"order_id":"o-1","amount":5}`, func(t *testing.T, err error) {
			if !errors.Is(err, runner.ErrNoClock) {
				t.Errorf("got %v; want ErrNoClock", err)
			}
		}},
		{"a signing key that is empty", []runner.ActivationOption{runner.WithClock(actClock), runner.WithSigningKey("k1", nil)}, "issue_refund", `{"order_id":"o-1","amount":5}`, func(t *testing.T, err error) {
			if err == nil || !strings.Contains(err.Error(), `the key for id "k1" is empty`) {
				t.Errorf("got %v; want an error saying key k1 is empty", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			if opts == nil {
				opts = []runner.ActivationOption{runner.WithClock(actClock)}
			}
			a := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, opts...)
			in, err := a.Act(tt.tool, json.RawMessage(tt.args))
			if in != nil {
				t.Errorf("Act returned an intent with its error: %+v", in)
			}
			tt.check(t, err)
			if a.Step() != 0 {
				t.Errorf("a refused Act advanced the step to %d", a.Step())
			}
			if staged, _ := a.Drain(); len(staged) != 0 {
				t.Errorf("a refused Act staged %d intents", len(staged))
			}
		})
	}
	if n := s.refunds.Load(); n != 0 {
		t.Errorf("issue_refund ran %d times; want 0", n)
	}
}

// The last step index, math.MaxUint32, takes one intent; the Act after it is
// refused and says where the rest go, rather than wrapping to step 0 and
// reusing that step's id.
func TestActRefusesOnceEveryStepIsUsed(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	a := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, runner.WithClock(actClock), runner.WithStartStep(math.MaxUint32))
	args := json.RawMessage(`{"order_id":"o-1","amount":5}`)
	in, err := a.Act("issue_refund", args)
	if err != nil {
		t.Fatalf("Act at the last step: %v", err)
	}
	if in.StepIndex != math.MaxUint32 {
		t.Errorf("the last intent has step %d; want %d", in.StepIndex, uint32(math.MaxUint32))
	}
	in, err = a.Act("issue_refund", args)
	if in != nil || err == nil || !strings.Contains(err.Error(), "next activation (seq 8)") {
		t.Errorf("Act after the last step = %+v, %v; want an error pointing at the next activation", in, err)
	}
	if staged, _ := a.Drain(); len(staged) != 1 {
		t.Errorf("staged %d intents; want the 1 at the last step", len(staged))
	}
}

// Act must accept and refuse exactly what the runner does for a tool with the
// same contract, with the same problems.
func TestActValidatesArgumentsExactlyAsTheRunnerDoes(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	check, err := s.bound.Pipeline.Get("refund_check")
	if err != nil {
		t.Fatal(err)
	}
	r := runner.New()
	for _, args := range []string{
		`{"order_id":"o-1","amount":25}`,
		`{"order_id":"o-1","amount":"25"}`,
		`{"order_id":"o-1","amount":25.0,"reason":null}`,
		`{"order_id":"o-1","amount":25,"reason":"late"}`,
		`{"order_id":"o-1"}`,
		`{"amount":25}`,
		`{"order_id":"o-1","amount":0}`,
		`{"order_id":"o-1","amount":10001}`,
		`{"order_id":"o-1","amount":2.5}`,
		`{"order_id":"o-1","amount":"ten"}`,
		`{"order_id":"","amount":1}`,
		`{"order_id":7,"amount":1}`,
		`{"order_id":"o-1","amount":1,"extra":true}`,
		`[]`,
		`"o-1"`,
		`null`,
		``,
		`{"order_id":`,
	} {
		t.Run(args, func(t *testing.T) {
			t.Parallel()
			a := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, runner.WithClock(actClock))
			in, actErr := a.Act("issue_refund", json.RawMessage(args))
			res, runErr := r.Run(context.Background(), check, json.RawMessage(args))
			if (actErr == nil) != (runErr == nil) {
				t.Fatalf("Act says %v; the runner says %v", actErr, runErr)
			}
			if actErr != nil {
				var ae, re *toolreg.ToolArgumentError
				if !errors.As(actErr, &ae) || !errors.As(runErr, &re) {
					t.Fatalf("want two *ToolArgumentError; Act: %v; runner: %v", actErr, runErr)
				}
				if diff := cmp.Diff(re.Problems, ae.Problems); diff != "" {
					t.Errorf("problems (-runner +Act):\n%s", diff)
				}
				return
			}
			// The function saw what the intent carries.
			want, err := canonjson.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			var got RefundRequest
			if err := json.Unmarshal(in.ArgsJSON, &got); err != nil {
				t.Fatal(err)
			}
			gotJSON, _ := canonjson.Marshal(got)
			if !bytes.Equal(want, gotJSON) {
				t.Errorf("the intent's args decode to %s; the runner's function got %s", gotJSON, want)
			}
		})
	}
}

func TestActivationOptionsShapeTheIntent(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	key := []byte("0123456789abcdef0123456789abcdef")
	a := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7,
		runner.WithClock(actClock),
		runner.WithIntentTTL(5*time.Minute),
		runner.WithStartStep(3),
		runner.WithSigningKey("k1", key),
	)
	in, err := a.Act("issue_refund", json.RawMessage(`{"order_id":"o-1","amount":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if in.StepIndex != 3 || in.ID != intent.IntentID([]byte("cust-42"), 7, 3) {
		t.Errorf("step %d id %s; want step 3 and its id", in.StepIndex, in.ID)
	}
	if got := in.ExpiresAtMs - in.CreatedAtMs; got != (5 * time.Minute).Milliseconds() {
		t.Errorf("expires %d ms after creation; want 5 minutes", got)
	}
	if err := in.VerifyHMAC(map[string][]byte{"k1": key}); err != nil {
		t.Errorf("the staged intent does not verify with the activation's key: %v", err)
	}
	if a.Step() != 4 {
		t.Errorf("Step() = %d after one Act from step 3; want 4", a.Step())
	}

	defaults := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, runner.WithClock(actClock))
	in, err = defaults.Act("issue_refund", json.RawMessage(`{"order_id":"o-1","amount":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := in.ExpiresAtMs - in.CreatedAtMs; got != runner.DefaultIntentTTL.Milliseconds() {
		t.Errorf("with no TTL, expires %d ms after creation; want the default hour", got)
	}
	if err := in.VerifyHMAC(map[string][]byte{"k1": key}); !errors.Is(err, intent.ErrUnsigned) {
		t.Errorf("VerifyHMAC of an intent staged with no key = %v; want ErrUnsigned", err)
	}

	// The clock is read at each Act, not once.
	now := actT0
	ticking := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, runner.WithClock(func() time.Time {
		now = now.Add(time.Second)
		return now
	}))
	var created []int64
	for range 2 {
		in, err := ticking.Act("issue_refund", json.RawMessage(`{"order_id":"o-1","amount":5}`))
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, in.CreatedAtMs)
	}
	if diff := cmp.Diff([]int64{actT0.UnixMilli() + 1000, actT0.UnixMilli() + 2000}, created); diff != "" {
		t.Errorf("created_at_ms (-want +got):\n%s", diff)
	}
}

func TestAWithIntentTTLThatIsNotPositiveIsRefused(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	for _, d := range []time.Duration{0, -time.Second} {
		a := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, runner.WithClock(actClock), runner.WithIntentTTL(d))
		in, err := a.Act("issue_refund", json.RawMessage(`{"order_id":"o-1","amount":5}`))
		if err == nil || !strings.Contains(err.Error(), "WithIntentTTL("+d.String()+")") || !strings.Contains(err.Error(), "positive") {
			t.Fatalf("Act with WithIntentTTL(%v) = %+v, %v; want an error naming the option and what to pass", d, in, err)
		}
		if a.Step() != 0 {
			t.Fatalf("a refused Act took a step")
		}
	}
	// A later valid option replaces a bad one, as options do.
	a := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, runner.WithClock(actClock), runner.WithIntentTTL(0), runner.WithIntentTTL(time.Minute))
	if _, err := a.Act("issue_refund", json.RawMessage(`{"order_id":"o-1","amount":5}`)); err != nil {
		t.Fatalf("Act after WithIntentTTL(0) then WithIntentTTL(1m): %v", err)
	}
}

func TestActReturnsAnIntentIndependentOfTheOneItStages(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	key := []byte("0123456789abcdef0123456789abcdef")
	a := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, runner.WithClock(actClock), runner.WithSigningKey("k1", key))
	first, err := a.Act("issue_refund", json.RawMessage(`{"order_id":"o-1","amount":5}`))
	if err != nil {
		t.Fatal(err)
	}
	second, err := a.Act("issue_refund", json.RawMessage(`{"order_id":"o-2","amount":6}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []*intent.Intent{clone(first), clone(second)}
	// The caller edits what Act returned, bytes and all.
	first.EntityKey[0] = 'X'
	first.ArgsJSON[2] = 'X'
	first.Signature[0] ^= 0xff
	first.ToolName = "other"
	second.EntityKey = append(second.EntityKey[:0], "mallory"...)
	got, err := a.Drain()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b *intent.Intent) bool {
		x, _ := a.MarshalBinary()
		y, _ := b.MarshalBinary()
		return bytes.Equal(x, y)
	})); diff != "" {
		t.Fatalf("Drain after the caller edited Act's intents (-want +got):\n%s", diff)
	}
	for _, in := range got {
		if err := in.VerifyHMAC(map[string][]byte{"k1": key}); err != nil {
			t.Errorf("a drained intent does not verify after the caller edited its copy: %v", err)
		}
		if string(in.EntityKey) != "cust-42" {
			t.Errorf("drained entity key %q, want cust-42", in.EntityKey)
		}
	}
}

func clone(in *intent.Intent) *intent.Intent {
	b, err := in.MarshalBinary()
	if err != nil {
		panic(err)
	}
	c := new(intent.Intent)
	if err := c.UnmarshalBinary(b); err != nil {
		panic(err)
	}
	return c
}

func TestNewActivationCopiesTheEntityKey(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	key := []byte("cust-42")
	a := runner.NewActivation(s.bound.Pipeline, key, 7, runner.WithClock(actClock))
	copy(key, "XXXX")
	in, err := a.Act("issue_refund", json.RawMessage(`{"order_id":"o-1","amount":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(in.EntityKey) != "cust-42" || in.ID != intent.IntentID([]byte("cust-42"), 7, 0) {
		t.Errorf("entity key %q id %s; want the key as passed to NewActivation", in.EntityKey, in.ID)
	}
}

func ExampleActivation() {
	// At startup: bind the functions (see package bindings).
	b := bindings.New([]*toolreg.Spec{lookupOrderSpec(), issueRefundSpec()})
	bindings.ReadOnly(b, "lookup_order", func(_ context.Context, a OrderArgs) (string, error) {
		return "order " + a.OrderID + ": delivered", nil
	})
	bindings.Effect(b, "issue_refund", func(_ context.Context, a RefundRequest) (string, error) {
		return "refunded", nil // runs only in the effector
	})
	bound, err := b.Bind()
	if err != nil {
		panic(err)
	}

	// One activation: entity "cust-42", seq 7, dated by its input event.
	eventTime := time.UnixMilli(1700000000000)
	a := runner.NewActivation(bound.Pipeline, []byte("cust-42"), 7,
		runner.WithClock(func() time.Time { return eventTime }))

	status, _ := a.RunTool(context.Background(), "lookup_order", json.RawMessage(`{"order_id":"o-1"}`))
	fmt.Println(status)

	in, _ := a.Act("issue_refund", json.RawMessage(`{"order_id":"o-1","amount":"25"}`))
	fmt.Println(in.ID, in.StepIndex, string(in.ArgsJSON))

	_, err = a.Act("lookup_order", json.RawMessage(`{"order_id":"o-1"}`))
	fmt.Println(err)

	intents, _ := a.Drain() // hand these to the effector
	fmt.Println(len(intents), "intent staged; nothing ran")
	// Output:
	// order o-1: delivered
	// 4132f03c-e378-54f4-938a-678743b88b3f 0 {"amount":25,"order_id":"o-1","reason":"customer request"}
	// toolreg: tool "lookup_order" is read-only: the effector runs only side-effecting tools; run it inline with the runner
	// 1 intent staged; nothing ran
}

func FuzzActValidatesAsTheRunner(f *testing.F) {
	for _, seed := range []string{`{"order_id":"o-1","amount":25}`, `{"order_id":"o-1","amount":"25","reason":null}`,
		`{"amount":0}`, `[]`, ``, `{"order_id":"\u00e9","amount":1e2}`} {
		f.Add([]byte(seed))
	}
	s := newSupportAgent(f)
	check, err := s.bound.Pipeline.Get("refund_check")
	if err != nil {
		f.Fatal(err)
	}
	r := runner.New()
	f.Fuzz(func(t *testing.T, args []byte) {
		a := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, runner.WithClock(actClock))
		in, actErr := a.Act("issue_refund", args)
		_, runErr := r.Run(context.Background(), check, args)
		if (actErr == nil) != (runErr == nil) {
			t.Fatalf("%q: Act says %v; the runner says %v", args, actErr, runErr)
		}
		if actErr != nil {
			return
		}
		if _, err := in.MarshalBinary(); err != nil {
			t.Fatalf("%q: the staged intent does not encode: %v", args, err)
		}
		if n := s.refunds.Load(); n != 0 {
			t.Fatalf("issue_refund ran %d times", n)
		}
	})
}

// BenchmarkAct compares staging an intent with running the read-only twin of
// the same contract through the runner, in the same run: Act's own cost is
// the validation both do, plus the id and the intent.
func BenchmarkAct(b *testing.B) {
	s := newSupportAgent(b)
	args := json.RawMessage(`{"order_id":"o-1","amount":"25"}`)
	b.Run("Act", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			a := runner.NewActivation(s.bound.Pipeline, []byte("cust-42"), 7, runner.WithClock(actClock))
			if _, err := a.Act("issue_refund", args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Runner.Run", func(b *testing.B) {
		check, _ := s.bound.Pipeline.Get("refund_check")
		r := runner.New()
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Run(ctx, check, args); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestActAndRunToolRefuseArgumentsAboveTheSizeLimit is part of item 10 of
// issue 13: arguments above the runner's limit (toolreg.DefaultMaxArgsBytes
// unless runner.WithMaxArgsBytes says otherwise) are refused before they are
// checked, and nothing is staged.
func TestActAndRunToolRefuseArgumentsAboveTheSizeLimit(t *testing.T) {
	t.Parallel()
	reg := sizeRegistry(t)
	big := func(n int) json.RawMessage {
		return json.RawMessage(`{"q":"` + strings.Repeat("x", n-len(`{"q":""}`)) + `"}`)
	}
	clock := runner.WithClock(func() time.Time { return time.UnixMilli(1700000000000) })
	t.Run("Act above the default limit", func(t *testing.T) {
		a := runner.NewActivation(reg, []byte("e"), 1, clock)
		_, err := a.Act("send", big(toolreg.DefaultMaxArgsBytes+1))
		var te *toolreg.ArgumentsTooLargeError
		if !errors.As(err, &te) || te.Tool != "send" || te.Size != toolreg.DefaultMaxArgsBytes+1 || te.Limit != toolreg.DefaultMaxArgsBytes || !errors.Is(err, toolreg.ErrTool) {
			t.Fatalf("Act = %v, want a *toolreg.ArgumentsTooLargeError", err)
		}
		if a.Step() != 0 {
			t.Errorf("step after a refused Act = %d, want 0", a.Step())
		}
		if ins, _ := a.Drain(); len(ins) != 0 {
			t.Errorf("a refused Act staged %d intents", len(ins))
		}
	})
	t.Run("Act and RunTool above a runner's own limit", func(t *testing.T) {
		a := runner.NewActivation(reg, []byte("e"), 1, clock, runner.WithRunner(runner.New(runner.WithMaxArgsBytes(20))))
		var te *toolreg.ArgumentsTooLargeError
		if _, err := a.Act("send", big(21)); !errors.As(err, &te) || te.Limit != 20 {
			t.Errorf("Act = %v, want the limit 20 named", err)
		}
		if _, err := a.Act("send", big(20)); err != nil {
			t.Errorf("Act at the limit = %v, want it staged", err)
		}
		if _, err := a.RunTool(context.Background(), "find", big(21)); !errors.As(err, &te) || te.Tool != "find" {
			t.Errorf("RunTool = %v, want a *toolreg.ArgumentsTooLargeError", err)
		}
		if _, err := a.RunTool(context.Background(), "find", big(20)); err != nil {
			t.Errorf("RunTool at the limit = %v", err)
		}
	})
}

func sizeRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	mk := func(name string, side bool) *toolreg.Spec {
		return &toolreg.Spec{Name: name, Description: "The " + name + " tool.", SideEffect: side,
			Params: []*toolreg.Param{{Name: "q", Schema: toolreg.Schema{Type: toolreg.TypeString}}}}
	}
	b := bindings.New([]*toolreg.Spec{mk("send", true), mk("find", false)}, bindings.PipelineOnly())
	bindings.ReadOnly(b, "find", func(_ context.Context, a struct {
		Q string `json:"q"`
	}) (int, error) {
		return len(a.Q), nil
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	return bound.Pipeline
}
