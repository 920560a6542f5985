package effectortest

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/cputime"
)

// benchSeq keeps the intents of every BenchmarkProcess round fresh: the
// rounds and -count repetitions of a benchmark may share one store.
var benchSeq atomic.Int64

// BenchmarkProcess measures one intent through effector.Process with store:
// claim, argument validation, the tool (a no-op that records its call),
// encoding the result, complete. It fails b unless every intent ran once.
func BenchmarkProcess(b *testing.B, store effector.DedupStore) {
	ctx := context.Background()
	e, calls := Effector(b, store)
	intents := make([]*intent.Intent, b.N)
	for i := range intents {
		intents[i] = Intent("bench", benchSeq.Add(1), uint32(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for _, in := range intents {
		if res, err := e.Process(ctx, in); err != nil || res.Status != intent.StatusOK {
			b.Fatalf("Process = %s %q, %v", res.Status, res.ErrorMessage, err)
		}
	}
	b.StopTimer()
	if got := calls.Total(); got != b.N {
		b.Fatalf("the tool ran %d times for %d intents", got, b.N)
	}
}

// FloorIDs returns n fresh intent ids made as BenchmarkProcessWorkers's
// intents' are (UUIDv5s, in no order), for the floors a store's benchmark
// writes beside it: a floor that writes ordered keys ("intent-1",
// "intent-2", ...) fills one B-tree page after another, while the store's
// ids land on a different page each, so it would measure a cheaper workload
// than the store's (on SQLite, 3x cheaper at 100 per transaction).
func FloorIDs(n int) []string {
	seq := benchSeq.Add(1)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = intent.IntentID([]byte("floor"), seq, uint32(i))
	}
	return ids
}

// BenchmarkClaimComplete measures one intent through store alone: Claim of a
// fresh id, then Complete with result.
func BenchmarkClaimComplete(b *testing.B, store effector.DedupStore, result []byte) {
	ctx := context.Background()
	prefix := "bench-" + strconv.FormatInt(benchSeq.Add(1), 10) + "-"
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := prefix + strconv.Itoa(i)
		c, err := store.Claim(ctx, id, effector.Call{}, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if err := store.Complete(ctx, id, c.Token, result, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProcessWorkers runs b.N intents through effector.Process on store
// from workers goroutines at once, and reports intents/s: what concurrent
// workers sharing one store reach.
func BenchmarkProcessWorkers(b *testing.B, store effector.DedupStore, workers int) {
	ctx := context.Background()
	e, calls := Effector(b, store)
	seq := benchSeq.Add(1)
	intents := make([]*intent.Intent, b.N)
	for i := range intents {
		intents[i] = Intent("bench-w", seq, uint32(i))
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu := time.Now(), cputime.Process()
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(intents)) {
					return
				}
				if res, err := e.Process(ctx, intents[i]); err != nil || res.Status != intent.StatusOK {
					b.Errorf("Process = %s %q, %v", res.Status, res.ErrorMessage, err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "intents/s")
	reportCPU(b, cpu)
	if got := calls.Total(); got != b.N && !b.Failed() {
		b.Fatalf("the tool ran %d times for %d intents", got, b.N)
	}
}

// BenchmarkBatch100 claims b.N fresh intents (ids as FloorIDs makes them)
// through store's native batches, 100 at a time: ClaimBatch of 100, then
// CompleteBatch of those 100 with result, from workers goroutines at once
// (each taking the next 100), as the floors batch100 and pipeline100 write
// theirs. It reports intents/s, and fails b unless every item was claimed
// and completed.
func BenchmarkBatch100(b *testing.B, store effector.DedupStore, workers int, result []byte) {
	ctx := context.Background()
	ids := FloorIDs(b.N)
	call := effector.NewCall(Tool, []byte(`{"key":"bench"}`))
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu := time.Now(), cputime.Process()
	for range workers {
		wg.Go(func() {
			reqs := make([]effector.ClaimRequest, 0, 100)
			out := make([]effector.ClaimOutcome, 100)
			comps := make([]effector.Completion, 0, 100)
			errs := make([]error, 100)
			for {
				hi := next.Add(100)
				lo := hi - 100
				if lo >= int64(len(ids)) {
					return
				}
				reqs, comps = reqs[:0], comps[:0]
				for _, id := range ids[lo:min(hi, int64(len(ids)))] {
					reqs = append(reqs, effector.ClaimRequest{IntentID: id, Call: call, Lease: time.Minute})
				}
				store.ClaimBatch(ctx, reqs, out[:len(reqs)])
				for i, o := range out[:len(reqs)] {
					if o.Err != nil || o.Claim.State != effector.Claimed {
						b.Errorf("ClaimBatch item %d = %s, %v", i, o.Claim.State, o.Err)
						return
					}
					comps = append(comps, effector.Completion{IntentID: reqs[i].IntentID, Token: o.Claim.Token, Result: result, TTL: time.Hour})
				}
				store.CompleteBatch(ctx, comps, errs[:len(comps)])
				for i, err := range errs[:len(comps)] {
					if err != nil {
						b.Errorf("CompleteBatch item %d: %v", i, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "intents/s")
	reportCPU(b, cpu)
}

// reportCPU reports the processor time this process spent per intent since
// it read start (cpu-µs/intent): with an embedded store, all of the store's
// work; a figure that moves less with the machine's load than intents/s.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((cputime.Process()-start).Microseconds())/float64(b.N), "cpu-µs/intent")
}
