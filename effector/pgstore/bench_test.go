package pgstore

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/cputime"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

// rounds keeps ids fresh across the rounds and -count repetitions of a
// benchmark, which share one database.
var rounds atomic.Int64

// BenchmarkClaimComplete measures one intent through the store (Claim, then
// Complete: two autocommit statements) with 1, 4 and 16 workers, against the
// floor the issue names, on the same server (fsync on) through the same pool
// in the same run: the same number of goroutines doing a bare INSERT and a
// bare UPDATE per intent in two transactions; and one intent through
// effector.Process with the store, at the same concurrency. Compare with:
// benchstat -col /impl; the intents/s metric is the throughput of all workers.
func BenchmarkClaimComplete(b *testing.B) {
	ctx := context.Background()
	srv := pgtest.Start(b, pgtest.WithFsync())
	_, url := srv.NewDatabase(b)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 20 // every worker a connection of its own
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if err := Migrate(ctx, pool); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE floor (id text PRIMARY KEY, v bytea)`); err != nil {
		b.Fatal(err)
	}
	s, err := Open(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	result := []byte(`{"status":1,"payload":{"ok":true}}`)
	inTx := func(query string, args ...any) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, query, args...)
			return err
		})
	}
	for _, workers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("workers=%d/impl=floor", workers), func(b *testing.B) {
			parallel(b, workers, func(id string) error {
				if err := inTx(`INSERT INTO floor (id, v) VALUES ($1, $2)`, id, []byte("token")); err != nil {
					return err
				}
				return inTx(`UPDATE floor SET v = $2 WHERE id = $1`, id, result)
			})
		})
		b.Run(fmt.Sprintf("workers=%d/impl=store", workers), func(b *testing.B) {
			parallel(b, workers, func(id string) error {
				c, err := s.Claim(ctx, id, effector.Call{}, time.Minute)
				if err != nil {
					return err
				}
				return s.Complete(ctx, id, c.Token, result, time.Hour)
			})
		})
		// One intent through effector.Process with this store: verify,
		// claim, run the tool, complete.
		b.Run(fmt.Sprintf("workers=%d/impl=process", workers), func(b *testing.B) {
			e, calls := effectortest.Effector(b, s)
			entity := "process-" + strconv.FormatInt(rounds.Add(1), 10)
			intents := make([]*intent.Intent, b.N)
			for i := range intents {
				intents[i] = effectortest.Intent(entity, int64(i), 0)
			}
			var n atomic.Int64
			parallel(b, workers, func(string) error {
				in := intents[n.Add(1)-1]
				res, err := e.Process(ctx, in)
				if err == nil && res.Status != intent.StatusOK {
					err = fmt.Errorf("Process = %s %q", res.Status, res.ErrorMessage)
				}
				return err
			})
			if got := calls.Total(); got != b.N {
				b.Fatalf("the tool ran %d times for %d intents", got, b.N)
			}
		})
	}
}

// parallel runs round for b.N fresh ids spread over workers goroutines and
// reports the throughput of all of them as intents/s.
func parallel(b *testing.B, workers int, round func(id string) error) {
	prefix := "bench-" + strconv.FormatInt(rounds.Add(1), 10) + "-"
	parallelIDs(b, workers, func(i int64) string { return prefix + strconv.FormatInt(i, 10) }, round)
}

// parallelIDs is parallel with the ids id gives, for i from 1 to b.N.
func parallelIDs(b *testing.B, workers int, id func(i int64) string, round func(id string) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	b.ReportAllocs()
	b.ResetTimer()
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := round(id(i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "intents/s")
}

// BenchmarkProcessWorkers runs intents through effector.Process from 1, 4,
// 16 and 64 concurrent workers on one store, and reports intents/s beside two
// floors written here, on the same server (fsync on) through the same pool
// in the same run, each from as many goroutines as there are workers:
// floor=tx-per-intent writes each intent's claim and completion (an INSERT,
// then an UPDATE) in one transaction of its own, sent in one round trip;
// floor=batch100 writes 100 intents' claims in one transaction, then their
// completions in another, each in one round trip, as a perfect group commit
// of 100 would. Both write the ids the store's intents have (UUIDv5s, in no
// order: effectortest.FloorIDs); floor=batch100-ordered-keys is batch100
// with ordered keys ("batch-N-i"), which fill one B-tree page after another,
// a cheaper workload than the store's. impl=store-batch100 is the store's
// native batches doing what batch100 does: ClaimBatch of 100 intents, then
// CompleteBatch of those 100, one statement each. impl=process-unbatched is the store with WithBatch(1), every
// claim and completion a transaction of its own: the store before group
// commit. Issue 20's goal: at 16 workers and more, at least half of
// batch100; at 1 worker, no slower than unbatched.
//
// All share one pool of pgxpool's default size (max(4, GOMAXPROCS)
// connections: 4 on a 2-core machine), as a service that does not size its
// pool runs; $PGSTORE_BENCH_CONNS sets another. $PGSTORE_BENCH_IMPLS, a
// space-separated list, replaces the store's impls: process,
// process-unbatched, process-lanes=N (the store WithLanes(N)). The store's lanes default to
// the pool's size, so it batches once every connection is busy.
func BenchmarkProcessWorkers(b *testing.B) {
	ctx := context.Background()
	srv := pgtest.Start(b, pgtest.WithFsync())
	_, url := srv.NewDatabase(b)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	if n, err := strconv.Atoi(os.Getenv("PGSTORE_BENCH_CONNS")); err == nil {
		cfg.MaxConns = int32(n)
	}
	b.Logf("pool of %d connections", cfg.MaxConns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if err := Migrate(ctx, pool); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE floor (id text PRIMARY KEY, v bytea)`); err != nil {
		b.Fatal(err)
	}
	result := []byte(`{"status":1,"payload":{"ok":true}}`)
	const (
		insertSQL = `INSERT INTO floor (id, v) VALUES ($1, $2)`
		updateSQL = `UPDATE floor SET v = $2 WHERE id = $1`
	)
	send := sender(pool)
	// Every run starts on empty tables after a checkpoint, so that no
	// implementation pays for the rows, the vacuuming or the dirty pages of
	// those run before it. (go test -count repeats each sub-benchmark in a
	// row, so the unbatched store always runs before the batched one.)
	//
	// It also reports what each intent cost in processor time, the
	// server's (pg-cpu-µs/intent: every backend, the WAL writer, ...) and
	// this process's (go-cpu-µs/intent), from the end of the checkpoint to
	// the end of the benchmark function: figures that do not move with the
	// machine's load as intents/s does.
	empty := func(b *testing.B) {
		if _, err := pool.Exec(ctx, `TRUNCATE toolreg_effector_dedup, floor`); err != nil {
			b.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `CHECKPOINT`); err != nil {
			b.Fatal(err)
		}
		pg, self := srv.CPU(), cputime.Process()
		b.Cleanup(func() {
			n := float64(b.N)
			b.ReportMetric(float64((srv.CPU()-pg).Microseconds())/n, "pg-cpu-µs/intent")
			b.ReportMetric(float64((cputime.Process()-self).Microseconds())/n, "go-cpu-µs/intent")
		})
	}
	impls := []string{"process-unbatched", "process"}
	if os.Getenv("PGSTORE_BENCH_IMPLS") != "" {
		impls = strings.Fields(os.Getenv("PGSTORE_BENCH_IMPLS"))
	}
	for _, workers := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("workers=%d/impl=floor-tx-per-intent", workers), func(b *testing.B) {
			empty(b)
			ids := effectortest.FloorIDs(b.N + 1)
			parallelIDs(b, workers, func(i int64) string { return ids[i] }, func(id string) error {
				batch := &pgx.Batch{}
				batch.Queue(insertSQL, id, []byte("token"))
				batch.Queue(updateSQL, id, result)
				return send(batch)
			})
		})
		// floor-batch100 writes the ids the store's intents have (UUIDv5s,
		// in no order, each landing on a B-tree page of its own);
		// floor-batch100-ordered-keys writes ordered keys, which fill one
		// page after another: a cheaper workload than the store's, kept to
		// show by how much.
		b.Run(fmt.Sprintf("workers=%d/impl=floor-batch100", workers), func(b *testing.B) {
			empty(b)
			ids := effectortest.FloorIDs(b.N)
			batch100(b, workers, send, func(i int64) string { return ids[i] })
		})
		b.Run(fmt.Sprintf("workers=%d/impl=floor-batch100-ordered-keys", workers), func(b *testing.B) {
			empty(b)
			prefix := "batch-" + strconv.FormatInt(rounds.Add(1), 10) + "-"
			batch100(b, workers, send, func(i int64) string { return prefix + strconv.FormatInt(i, 10) })
		})
		// The store's native batches doing what floor-batch100 does
		// (issue 32): ClaimBatch of 100 intents, then CompleteBatch of
		// those 100, from as many goroutines.
		b.Run(fmt.Sprintf("workers=%d/impl=store-batch100", workers), func(b *testing.B) {
			empty(b)
			s, err := Open(ctx, pool)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			effectortest.BenchmarkBatch100(b, s, workers, result)
			b.ReportMetric(float64(s.batchItems.Load())/float64(max(1, s.batchStatements.Load())), "items/stmt")
		})
		for _, impl := range impls {
			b.Run(fmt.Sprintf("workers=%d/impl=%s", workers, impl), func(b *testing.B) {
				var opts []Option
				if impl == "process-unbatched" {
					opts = append(opts, WithBatch(1))
				}
				var lanes int
				if _, err := fmt.Sscanf(impl, "process-lanes=%d", &lanes); err == nil {
					opts = append(opts, WithLanes(lanes))
				}
				empty(b)
				s, err := Open(ctx, pool, opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				effectortest.BenchmarkProcessWorkers(b, s, workers)
				b.ReportMetric(float64(s.ops())/float64(max(1, s.batches())), "ops/commit")
			})
		}
	}
}

// batch100 is the floor that writes 100 intents' claims in one transaction,
// then their completions in another, each in one round trip, from workers
// goroutines at once, for b.N intents whose ids id gives.
func batch100(b *testing.B, workers int, send func(*pgx.Batch) error, id func(i int64) string) {
	const (
		insertSQL = `INSERT INTO floor (id, v) VALUES ($1, $2)`
		updateSQL = `UPDATE floor SET v = $2 WHERE id = $1`
	)
	result := []byte(`{"status":1,"payload":{"ok":true}}`)
	// Each goroutine takes 100 ids at a time.
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	b.ReportAllocs()
	b.ResetTimer()
	for range workers {
		wg.Go(func() {
			for {
				hi := next.Add(100)
				lo := hi - 100
				if lo >= int64(b.N) {
					return
				}
				hi = min(hi, int64(b.N))
				claims, completions := &pgx.Batch{}, &pgx.Batch{}
				for i := lo; i < hi; i++ {
					claims.Queue(insertSQL, id(i), []byte("token"))
					completions.Queue(updateSQL, id(i), result)
				}
				if err := send(claims); err != nil {
					errs <- err
					return
				}
				if err := send(completions); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "intents/s")
}

// sender returns a function that runs a batch's statements on pool in one
// round trip, one implicit transaction, and reads through its commit.
func sender(pool *pgxpool.Pool) func(*pgx.Batch) error {
	return func(batch *pgx.Batch) error {
		br := pool.SendBatch(context.Background(), batch)
		for range batch.Len() {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return err
			}
		}
		return br.Close()
	}
}
