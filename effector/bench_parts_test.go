package effector

import (
	"context"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/canonjson"
	"github.com/beam-agents/toolreg/intent"
)

// BenchmarkProcessParts measures, each alone, the parts of Process that a
// direct ToolRunner.Run does not have (see BenchmarkProcess for the whole):
// the memory store's claim and completion, encoding the payload, building
// and marshaling the result, and setting up and tearing down an execution
// (its context and watchdog). Where BenchmarkProcess's overhead comes from
// is found here first.
func BenchmarkProcessParts(b *testing.B) {
	ctx := context.Background()
	ids := make([]string, 8192)
	for i := range ids {
		ids[i] = intent.IntentID([]byte("entity-1"), 7, uint32(i))
	}
	in := &intent.Intent{ID: ids[0], EntityKey: []byte("entity-1"), Seq: 7, ToolName: "refund"}
	e := &Effector{cfg: defaultConfig()}
	e.cfg.now = func() time.Time { return time.UnixMilli(1700000000000) }
	payload := []byte(`{"amount":30,"note":"remboursé","refund_id":"rf-o-1"}`)

	b.Run("part=store", func(b *testing.B) {
		// As in BenchmarkProcess: results expire before the ring comes round.
		s := NewMemoryStore()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			id := ids[i%len(ids)]
			i++
			c, err := s.Claim(ctx, id, Call{}, time.Minute)
			if err != nil || c.State != Claimed {
				b.Fatalf("Claim = %v, %v", c.State, err)
			}
			if err := s.Complete(ctx, id, c.Token, payload, time.Millisecond); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("part=payload", func(b *testing.B) {
		type receipt struct {
			RefundID string `json:"refund_id"`
			Amount   int    `json:"amount"`
			Note     string `json:"note"`
		}
		var v any = receipt{RefundID: "rf-o-1", Amount: 30, Note: "remboursé"}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := canonjson.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("part=result", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := e.result(in, intent.StatusOK, payload, "")
			buf := wireBufs.Get().(*[]byte)
			out, err := r.AppendBinary((*buf)[:0])
			if err != nil {
				b.Fatal(err)
			}
			*buf = out
			putWireBuf(buf)
		}
	})
	b.Run("part=execution", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			x := e.start(ctx, in, time.Minute, claim{token: "t"})
			if !x.stop() {
				b.Fatal("an execution that returned at once was interrupted")
			}
		}
	})
}
