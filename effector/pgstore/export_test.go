package pgstore

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/internal/effectortest"
)

// FloorBatch100 is BenchmarkProcessWorkers's floor-batch100 for the
// benchmarks of package pgstore_test (which may import pgqueue): b.N
// intents' ids (effectortest.FloorIDs) written 100 claims to a transaction,
// then their 100 completions in another, from workers goroutines at once,
// into a table floor on pool, created if missing. It reports intents/s.
func FloorBatch100(b *testing.B, pool *pgxpool.Pool, workers int) {
	if _, err := pool.Exec(context.Background(), `CREATE TABLE IF NOT EXISTS floor (id text PRIMARY KEY, v bytea)`); err != nil {
		b.Fatal(err)
	}
	ids := effectortest.FloorIDs(b.N)
	batch100(b, workers, sender(pool), func(i int64) string { return ids[i] })
}

// ItemsPerStatement is how many items s's batch statements (ClaimBatch,
// CompleteBatch, ReleaseBatch) carried on average so far.
func ItemsPerStatement(s *Store) float64 {
	return float64(s.batchItems.Load()) / float64(max(1, s.batchStatements.Load()))
}
