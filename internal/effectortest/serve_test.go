package effectortest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
)

// memoryServe runs BenchmarkServe on a memory store over the JSONL file of
// ServeIntents, after before (given the effector, the store's clock and the
// intents) when it is not nil, and returns the result: N is 0 when the
// benchmark failed.
func memoryServe(before func(b *testing.B, e *effector.Effector, clock *atomic.Int64, ins []*intent.Intent)) testing.BenchmarkResult {
	return testing.Benchmark(func(b *testing.B) {
		var clock atomic.Int64
		clock.Store(time.Now().UnixNano())
		store := effector.NewMemoryStore(effector.WithStoreClock(func() time.Time { return time.Unix(0, clock.Load()) }))
		e, calls := Effector(b, store, effector.WithResultTTL(time.Minute))
		ins := ServeIntents(b)
		if before != nil {
			before(b, e, &clock, ins)
		}
		src, sink := JSONLFile(b, ins)
		BenchmarkServe(b, src, sink, e, calls, ins, 4)
	})
}

func TestBenchmarkServeReportsEveryIntentServedOnce(t *testing.T) {
	r := memoryServe(nil)
	if r.N == 0 {
		t.Fatal("BenchmarkServe failed on a clean run")
	}
	if r.Extra["intents/s"] <= 0 {
		t.Errorf("intents/s = %v, want a positive rate", r.Extra["intents/s"])
	}
}

// An intent whose tool ran before Serve, and whose stored result then
// expired, runs again under Serve: the benchmark must fail, not report it.
func TestBenchmarkServeFailsWhenAToolRanTwice(t *testing.T) {
	r := memoryServe(func(b *testing.B, e *effector.Effector, clock *atomic.Int64, ins []*intent.Intent) {
		if _, err := e.Process(context.Background(), ins[0]); err != nil {
			b.Fatal(err)
		}
		clock.Add(int64(2 * time.Minute)) // past the result's TTL
	})
	if r.N != 0 {
		t.Fatalf("BenchmarkServe passed (N=%d) with an intent whose tool ran twice", r.N)
	}
}
