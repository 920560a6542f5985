package pgqueue_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector/pgqueue"
	"github.com/beam-agents/toolreg/effector/pgstore"
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
