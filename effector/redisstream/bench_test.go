package redisstream_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/beam-agents/toolreg/effector/redisstream"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// BenchmarkSink measures results/s appended by the Sink, against its own
// baseline in the same run on the same redis-server (appendfsync always):
// impl=publish publishes each result and waits for it before the next (one
// XADD round trip per result: what Serve got from the Sink before it
// staged); impl=stage100 stages 100 results and then waits for them (one
// pipeline for the 100, as Serve stages a batch's results).
func BenchmarkSink(b *testing.B) {
	ctx := context.Background()
	rdb := redistest.Start(b, redistest.WithDurability()).Client(b)
	var round atomic.Int64
	results := func(b *testing.B) (string, []intent.Result) {
		r := strconv.FormatInt(round.Add(1), 10)
		rs := make([]intent.Result, b.N)
		for i := range rs {
			rs[i] = intent.Result{IntentID: "r" + r + "-" + strconv.Itoa(i), Status: intent.StatusOK, Payload: []byte(`{"ok":true}`)}
		}
		return "results-" + r, rs
	}
	b.Run("impl=publish", func(b *testing.B) {
		stream, rs := results(b)
		sink := redisstream.NewSink(rdb, stream)
		b.ReportAllocs()
		b.ResetTimer()
		for _, r := range rs {
			if err := sink.Publish(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "results/s")
	})
	b.Run("impl=stage100", func(b *testing.B) {
		stream, rs := results(b)
		sink := redisstream.NewSink(rdb, stream)
		waits := make([]func() error, 0, 100)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < len(rs); i += 100 {
			waits = waits[:0]
			for _, r := range rs[i:min(i+100, len(rs))] {
				w, err := sink.Stage(ctx, r)
				if err != nil {
					b.Fatal(err)
				}
				waits = append(waits, w)
			}
			for _, w := range waits {
				if err := w(); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "results/s")
	})
}
