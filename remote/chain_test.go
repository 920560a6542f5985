package remote_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/mcpserver"
	"github.com/beam-agents/toolreg/remote"
)

func TestTheIdempotencyKeyIsTheOneToolregsServerReads(t *testing.T) {
	t.Parallel()
	if remote.MetaIdempotencyKey != mcpserver.MetaIdempotencyKey {
		t.Fatalf("remote sends %q, mcpserver reads %q", remote.MetaIdempotencyKey, mcpserver.MetaIdempotencyKey)
	}
}

// A toolreg service that pins another toolreg service's effect gets
// execute-once end to end: the idempotency key it sends is the intent id,
// and the serving side's effector deduplicates on it, so an effect retried
// by two effectors (stores that do not share the intent) runs once upstream.
func TestAnEffectPinnedFromAToolregServerRunsOnceUpstream(t *testing.T) {
	t.Parallel()
	charge := &toolreg.Spec{Name: "charge", Description: "Charge a card.", SideEffect: true,
		Params:  []*toolreg.Param{{Name: "cents", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Minimum: "1"}}},
		Returns: &toolreg.Schema{Type: toolreg.TypeObject, Properties: []*toolreg.Param{{Name: "charged", Schema: toolreg.Schema{Type: toolreg.TypeInteger}}}}}
	type chargeArgs struct {
		Cents int64 `json:"cents"`
	}
	type charged struct {
		Charged int64 `json:"charged"`
	}
	var runs atomic.Int32
	b := bindings.New([]*toolreg.Spec{charge})
	bindings.Effect(b, "charge", func(ctx context.Context, a chargeArgs) (charged, error) {
		runs.Add(1)
		return charged{a.Cents}, nil
	})
	upstream, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	eff, err := effector.New(upstream.Effector, effector.NewMemoryStore(), effector.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	// The serving side knows its caller (over HTTP its bearer token, here
	// its configuration): idempotency keys are their caller's, and a caller
	// without a name has only its session's.
	srv, err := mcpserver.New(upstream, eff, mcpserver.WithCaller(toolreg.Principal{Subject: "orders-service"}))
	if err != nil {
		t.Fatal(err)
	}
	payments := remote.Server{Transport: inMemory(srv.MCP())}

	_, specs := pin(t, "payments", payments)
	_, bound := bindAll(t, specs, remote.Servers{"payments": payments})
	for range 2 {
		r := process(t, bound, effector.NewMemoryStore(), "charge", `{"cents":250}`)
		if r.Status != intent.StatusOK || string(r.Payload) != `{"charged":250}` {
			t.Fatalf("charge: %v %s %s", r.Status, r.Payload, r.ErrorMessage)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the upstream effect ran %d times, want once", n)
	}
}
