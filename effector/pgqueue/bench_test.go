package pgqueue_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector/pgqueue"
	"github.com/beam-agents/toolreg/effector/pgstore"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

// BenchmarkServe measures intents/s through effector.Serve at 4 workers with
// the queue's Source and Sink and a pgstore dedup store in the same database
// (claim the row, claim and complete the intent in the store, run the tool,
// publish the result, delete the row), against the floor the issue names, on
// the same server (fsync on) in the same run: 4 goroutines each dequeuing
// one row at a time with a bare FOR UPDATE SKIP LOCKED delete (one statement,
// one commit per row) until the table is empty. The queue is filled before
// the timer starts, in both; the serve row runs until every intent is
// acknowledged and fails unless each ran exactly once
// (effectortest.BenchmarkServe). Compare with: benchstat -col /impl.
func BenchmarkServe(b *testing.B) {
	ctx := context.Background()
	srv := pgtest.Start(b, pgtest.WithFsync())
	_, url := srv.NewDatabase(b)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 20
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if err := pgstore.Migrate(ctx, pool); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE floor (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, intent bytea NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	store, err := pgstore.Open(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	q, err := pgqueue.Open(ctx, pool, "bench")
	if err != nil {
		b.Fatal(err)
	}
	const workers = 4

	b.Run("workers=4/impl=floor", func(b *testing.B) {
		row, err := effectortest.Intent("floor", 1, 0).AppendBinary(nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO floor (intent) SELECT $1 FROM generate_series(1, $2)`, row, b.N); err != nil {
			b.Fatal(err)
		}
		var taken atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		b.ReportAllocs()
		b.ResetTimer()
		for range workers {
			wg.Go(func() {
				for {
					var got []byte
					err := pool.QueryRow(ctx, `DELETE FROM floor WHERE id = (SELECT id FROM floor ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING intent`).Scan(&got)
					if errors.Is(err, pgx.ErrNoRows) {
						return
					}
					if err != nil {
						errs <- err
						return
					}
					taken.Add(1)
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		if n := taken.Load(); n != int64(b.N) {
			b.Fatalf("the floor dequeued %d rows of %d", n, b.N)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "intents/s")
	})

	b.Run("workers=4/impl=serve", func(b *testing.B) {
		ins := effectortest.ServeIntents(b)
		for i := 0; i < len(ins); i += 1000 {
			if err := pgqueue.Enqueue(ctx, pool, "bench", ins[i:min(i+1000, len(ins))]...); err != nil {
				b.Fatal(err)
			}
		}
		e, calls := effectortest.Effector(b, store)
		src, err := q.NewSource()
		if err != nil {
			b.Fatal(err)
		}
		effectortest.BenchmarkServe(b, src, q.Sink(), e, calls, ins, workers)
		if err := src.Close(ctx); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkSink measures results/s written by the Sink, against its own
// baseline in the same run on the same server (fsync on): impl=publish
// publishes each result and waits for it before the next (one statement and
// one commit per result: what Serve got from the Sink before it staged);
// impl=stage100 stages 100 results and then waits for them (one statement
// for the 100, as Serve stages a batch's results).
func BenchmarkSink(b *testing.B) {
	ctx := context.Background()
	pool, _ := pgtest.Start(b, pgtest.WithFsync()).NewDatabase(b)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		b.Fatal(err)
	}
	q, err := pgqueue.Open(ctx, pool, "bench")
	if err != nil {
		b.Fatal(err)
	}
	var round atomic.Int64
	results := func(b *testing.B) []intent.Result {
		r := strconv.FormatInt(round.Add(1), 10)
		rs := make([]intent.Result, b.N)
		for i := range rs {
			rs[i] = intent.Result{IntentID: "r" + r + "-" + strconv.Itoa(i), Status: intent.StatusOK, Payload: []byte(`{"ok":true}`)}
		}
		return rs
	}
	b.Run("impl=publish", func(b *testing.B) {
		sink, rs := q.Sink(), results(b)
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
		sink, rs := q.Sink(), results(b)
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
