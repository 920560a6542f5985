package pgstore_test

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/pgqueue"
	"github.com/beam-agents/toolreg/effector/pgstore"
	"github.com/beam-agents/toolreg/internal/cputime"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

var serveRounds atomic.Int64

// BenchmarkServe serves b.N intents through effector.Serve into this store
// and reports intents/s beside the floor the issue names, on the same server
// (fsync on) through the same pool (pgxpool's default size) in the same run:
// impl=floor-batch100 writes 100 intents' claims in one transaction, then
// their completions in another (BenchmarkProcessWorkers's floor), from as
// many goroutines as the row's workers. The Serve rows: impl=serve-pgqueue
// takes the intents from a pgqueue queue in the same database (claims of
// effector.DefaultBatchSize rows with SKIP LOCKED, results to the queue's
// results table, acknowledgements deleting the rows); impl=serve-jsonlfile
// reads them from a JSONL file with its checkpoint and writes the results to
// a JSONL file, both fsynced. Each runs at 1 and 16 workers (the tool
// concurrency), reports the store's items per batch statement, and fails
// unless every intent ran exactly once.
func BenchmarkServe(b *testing.B) {
	ctx := context.Background()
	srv := pgtest.Start(b, pgtest.WithFsync())
	pool, _ := srv.NewDatabase(b)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		b.Fatal(err)
	}
	serve := func(b *testing.B, workers int, queue bool) {
		s, err := pgstore.Open(ctx, pool)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		e, calls := effectortest.Effector(b, s)
		ins := effectortest.ServeIntents(b)
		var src effector.Source
		var sink effector.Sink
		if queue {
			name := "bench-" + strconv.FormatInt(serveRounds.Add(1), 10)
			for i := 0; i < len(ins); i += 1000 {
				if err := pgqueue.Enqueue(ctx, pool, name, ins[i:min(i+1000, len(ins))]...); err != nil {
					b.Fatal(err)
				}
			}
			q, err := pgqueue.Open(ctx, pool, name)
			if err != nil {
				b.Fatal(err)
			}
			qs, err := q.NewSource(pgqueue.WithBatch(effector.DefaultBatchSize), pgqueue.WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := qs.Close(ctx); err != nil {
					b.Error(err)
				}
			}()
			src, sink = qs, q.Sink()
		} else {
			src, sink = effectortest.JSONLFile(b, ins)
		}
		pg, self := srv.CPU(), cputime.Process()
		effectortest.BenchmarkServe(b, src, sink, e, calls, ins, workers)
		n := float64(b.N)
		b.ReportMetric(float64((srv.CPU()-pg).Microseconds())/n, "pg-cpu-µs/intent")
		b.ReportMetric(float64((cputime.Process()-self).Microseconds())/n, "go-cpu-µs/intent")
		b.ReportMetric(pgstore.ItemsPerStatement(s), "items/stmt")
	}
	for _, workers := range []int{1, 16} {
		w := "/workers=" + strconv.Itoa(workers)
		b.Run("impl=floor-batch100"+w, func(b *testing.B) { pgstore.FloorBatch100(b, pool, workers) })
		b.Run("impl=serve-pgqueue"+w, func(b *testing.B) { serve(b, workers, true) })
		b.Run("impl=serve-jsonlfile"+w, func(b *testing.B) { serve(b, workers, false) })
	}
}
