package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Scans returns how many sequential and index scans Postgres has counted
// on table, once its counters hold still: a backend reports its counts a
// second or so after its transaction, so a test that reads them right after
// its statements would miss theirs. A plan that reads a whole table for a
// few rows shows as a sequential scan.
func Scans(t testing.TB, pool *pgxpool.Pool, table string) (seq, idx int64) {
	t.Helper()
	read := func() (seq, idx int64) {
		t.Helper()
		if err := pool.QueryRow(context.Background(), `SELECT coalesce(seq_scan, 0), coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE relname = $1`, table).Scan(&seq, &idx); err != nil {
			t.Fatalf("pgtest: reading the scans of %s: %v", table, err)
		}
		return seq, idx
	}
	seq, idx = read()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(1500 * time.Millisecond)
		s, i := read()
		if s == seq && i == idx {
			return seq, idx
		}
		seq, idx = s, i
	}
	t.Fatalf("pgtest: the scan counters of %s never held still", table)
	return 0, 0
}

// SmallPool is a pool of its own on url with at most n connections, so
// that a test knows each runs its statements many times.
func SmallPool(t testing.TB, url string, n int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	cfg.MaxConns = n
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pgtest: pool on %s: %v", url, err)
	}
	t.Cleanup(pool.Close)
	return pool
}
