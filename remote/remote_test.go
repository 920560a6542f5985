package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/remote"
	"github.com/beam-agents/toolreg/runner"
)

// bindAll connects to servers, binds the remote tools of specs (and a local
// read-only tool if a manifest declares one), and returns both tables.
func bindAll(t testing.TB, specs []*toolreg.Spec, servers remote.Servers, opts ...remote.Option) (*remote.Set, *bindings.Bound) {
	t.Helper()
	opts = append([]remote.Option{remote.WithLogger(nil)}, opts...)
	set, err := remote.Connect(context.Background(), specs, servers, opts...)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = set.Close() })
	b := bindings.New(specs)
	set.Bind(b)
	bound, err := b.Bind()
	if err != nil {
		t.Fatalf("Bind: %v", err)
	}
	return set, bound
}

// process stages name(args) in a fresh activation and runs it through an
// effector over store.
func process(t testing.TB, bound *bindings.Bound, store effector.DedupStore, name, args string, opts ...effector.Option) intent.Result {
	t.Helper()
	now := time.Now()
	act := runner.NewActivation(bound.Pipeline, []byte("ticket-1"), 1, runner.WithClock(func() time.Time { return now }))
	if _, err := act.Act(name, json.RawMessage(args)); err != nil {
		t.Fatalf("Act: %v", err)
	}
	ins, err := act.Drain()
	if err != nil {
		t.Fatal(err)
	}
	eff, err := effector.New(bound.Effector, store, append([]effector.Option{effector.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := eff.Process(context.Background(), ins[0])
	if err != nil {
		t.Fatalf("Process: %v", err)
	}
	return res
}

// The whole path against the MCP Go SDK's server: pin, review (side_effect
// decided), bind, a read-only call inline with its result checked against
// the pinned returns, a side-effecting one through Act and the effector with
// the intent id as its idempotency key, and a tool with no output schema.
func TestPinAndBindTheGoSDKServer(t *testing.T) {
	t.Parallel()
	for _, over := range []string{"in-memory", "streamable HTTP"} {
		t.Run(over, func(t *testing.T) {
			t.Parallel()
			s := newShop(t)
			srv := s.server()
			if over == "streamable HTTP" {
				srv = s.httpServer(t)
			}
			_, specs := pin(t, "shop", srv, "lookup_order", "ping")
			_, bound := bindAll(t, specs, remote.Servers{"shop": srv})

			act := runner.NewActivation(bound.Pipeline, []byte("ticket-1"), 1)
			res, err := act.RunTool(context.Background(), "lookup_order", json.RawMessage(`{"order_id":"ord_1"}`))
			if err != nil {
				t.Fatal(err)
			}
			if got := string(res.(json.RawMessage)); got != `{"amount":42.5,"status":"paid"}` {
				t.Errorf("lookup_order = %s", got)
			}
			if c := s.callsTo("lookup_order"); len(c) != 1 || c[0].Args != `{"order_id":"ord_1","verbose":false}` {
				t.Errorf("the server was sent %+v, want the canonical arguments with the default applied", c)
			}
			pong, err := act.RunTool(context.Background(), "ping", nil)
			if err != nil || !strings.Contains(string(pong.(json.RawMessage)), `"text":"pong"`) {
				t.Errorf("ping = %s, %v", pong, err)
			}

			r := process(t, bound, effector.NewMemoryStore(), "refund_order", `{"order_id":"ord_1","amount":"20"}`)
			if r.Status != intent.StatusOK || string(r.Payload) != `{"refund_id":"re_1"}` {
				t.Fatalf("refund = %v %s %s", r.Status, r.Payload, r.ErrorMessage)
			}
			c := s.callsTo("refund_order")
			if len(c) != 1 || c[0].Args != `{"amount":20,"order_id":"ord_1"}` || c[0].Meta[remote.MetaIdempotencyKey] != r.IntentID {
				t.Errorf("the server was sent %+v, want the coerced arguments and the intent id %s as the idempotency key", c, r.IntentID)
			}
		})
	}
}

// Invariant 1 for remote tools: the pipeline cannot reach a side-effecting
// remote tool's call (its table holds the contract), the runner refuses it,
// and the call itself refuses to send without the effector's intent, so even
// Tool.Unwrap outside the effector sends nothing.
func TestARemoteEffectIsSentOnlyByTheEffector(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	_, specs := pin(t, "shop", s.server(), "lookup_order", "ping")
	_, bound := bindAll(t, specs, remote.Servers{"shop": s.server()})
	pt, err := bound.Pipeline.Get("refund_order")
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"order_id":"ord_1","amount":20}`)
	if _, err := runner.New().Run(context.Background(), pt, args); !errors.As(err, new(*toolreg.SideEffectToolError)) {
		t.Errorf("runner.Run = %v", err)
	}
	act := runner.NewActivation(bound.Pipeline, []byte("k"), 1)
	if _, err := act.RunTool(context.Background(), "refund_order", args); !errors.As(err, new(*toolreg.SideEffectToolError)) {
		t.Errorf("RunTool = %v", err)
	}
	et, _ := bound.Effector.Get("refund_order")
	fn := et.Unwrap().(func(context.Context, json.RawMessage) (json.RawMessage, error)) // what effectcheck reports outside the effector
	_, err = fn(context.Background(), args)
	var ce *remote.CallError
	if !errors.As(err, &ce) || ce.Sent || !strings.Contains(err.Error(), "only by the effector") {
		t.Errorf("the unwrapped call without an intent = %v, want a *remote.CallError, not sent", err)
	}
	if n := len(s.callsTo("refund_order")); n != 0 {
		t.Fatalf("the server got %d refund calls from outside the effector", n)
	}
}

// A server that honours the idempotency key (here, one that deduplicates on
// it, as the TypeScript server below and toolreg's own MCP server do) runs a
// retried effect once: two effectors whose stores do not share the intent
// (a lost store, a replay elsewhere) each send it, with the same key.
func TestARetriedEffectRunsOnceOnAServerThatHonoursTheKey(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	_, specs := pin(t, "shop", s.server(), "lookup_order", "ping")
	_, bound := bindAll(t, specs, remote.Servers{"shop": s.server()})
	a := process(t, bound, effector.NewMemoryStore(), "refund_order", `{"order_id":"ord_1","amount":20}`)
	b := process(t, bound, effector.NewMemoryStore(), "refund_order", `{"order_id":"ord_1","amount":20}`)
	if a.Status != intent.StatusOK || string(a.Payload) != string(b.Payload) {
		t.Fatalf("results %s and %s", a.Payload, b.Payload)
	}
	if len(s.callsTo("refund_order")) != 2 || s.nRefunds != 1 {
		t.Errorf("%d calls, %d refunds: want the retry sent and deduplicated by the server", len(s.callsTo("refund_order")), s.nRefunds)
	}
}

// An intent the effector runs again after an earlier attempt stopped with no
// result (its worker died: the claim lapsed) is sent with the same key and
// toolreg/reclaimed, so the server knows it may have seen it; the result says
// the effect is unknown.
func TestAReclaimedEffectIsSentAsReclaimed(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	_, specs := pin(t, "shop", s.server(), "lookup_order", "ping")
	_, bound := bindAll(t, specs, remote.Servers{"shop": s.server()})
	now := time.Now()
	act := runner.NewActivation(bound.Pipeline, []byte("ticket-1"), 1, runner.WithClock(func() time.Time { return now }))
	in, err := act.Act("refund_order", json.RawMessage(`{"order_id":"ord_1","amount":20}`))
	if err != nil {
		t.Fatal(err)
	}
	store := effector.NewMemoryStore()
	if _, err := store.Claim(context.Background(), in.ID, effector.CallOf(in), 20*time.Millisecond); err != nil { // a worker that died
		t.Fatal(err)
	}
	eff, err := effector.New(bound.Effector, store, effector.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := eff.Process(context.Background(), in)
	if err != nil || res.Status != intent.StatusOK || !strings.HasPrefix(res.ErrorMessage, "effect unknown") {
		t.Fatalf("Process = %v %s %q, %v", res.Status, res.Payload, res.ErrorMessage, err)
	}
	c := s.callsTo("refund_order")
	if len(c) != 1 || c[0].Meta[remote.MetaIdempotencyKey] != in.ID || c[0].Meta[remote.MetaReclaimed] != true {
		t.Errorf("the server was sent %+v, want the intent id and toolreg/reclaimed", c)
	}
}
