package pgstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

// seed inserts n rows of each kind: expired results, live results, live
// claims, claims lapsed an hour ago (kept: within AttemptMemory), and claims
// lapsed longer than AttemptMemory ago.
func seed(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	for kind, row := range map[string]string{
		"expired-result": `true, 'r', clock_timestamp() - interval '1 second', NULL`,
		"live-result":    `true, 'r', clock_timestamp() + interval '1 hour', NULL`,
		"live-claim":     `false, NULL, clock_timestamp() + interval '1 hour', 'tok'`,
		"recent-lapse":   `false, NULL, clock_timestamp() - interval '1 hour', 'tok'`,
		"old-lapse":      `false, NULL, clock_timestamp() - interval '25 hours', 'tok'`,
	} {
		if _, err := pool.Exec(context.Background(), fmt.Sprintf(`INSERT INTO toolreg_effector_dedup
			(intent_id, done, result, expires_at, token, call_digest, call_tool, attempts, reclaimed)
			SELECT convert_to('%s-' || i, 'UTF8'), %s, '\x00', 't', 1, false FROM generate_series(1, %d) i`, kind, row, n)); err != nil {
			t.Fatalf("seeding %s: %v", kind, err)
		}
	}
}

func countKinds(t *testing.T, pool *pgxpool.Pool) map[string]int {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT split_part(convert_from(intent_id, 'UTF8'), '-', 1) || '-' || split_part(convert_from(intent_id, 'UTF8'), '-', 2), count(*) FROM toolreg_effector_dedup GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		got[k] = n
	}
	return got
}

func wantKept(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	want := map[string]int{"live-result": n, "live-claim": n, "recent-lapse": n}
	got := countKinds(t, pool)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows after the sweep = %v, want %v: expired results and claims lapsed past AttemptMemory gone, the rest kept", got, want)
	}
}

func TestSweepDeletesExpiredRowsInBatches(t *testing.T) {
	t.Parallel()
	pool := migrated(t, pgtest.Start(t))
	seed(t, pool, 250)
	s := openForTest(t, pool, WithSweepBatch(100), WithSweepInterval(0))
	n, err := s.sweepBatchOnce(context.Background())
	if err != nil || n != 100 {
		t.Fatalf("one sweep statement deleted %d rows (%v), want the batch of 100", n, err)
	}
	total, err := s.Sweep(context.Background())
	if err != nil || total != 400 {
		t.Fatalf("Sweep deleted %d rows (%v), want the other 400 of the 500 sweepable", total, err)
	}
	wantKept(t, pool, 250)
}

// TestConcurrentSweepsDeleteEachRowOnce: several processes sweep one table
// at once; SKIP LOCKED gives each its own rows, none fails, and together they
// delete every sweepable row exactly once.
func TestConcurrentSweepsDeleteEachRowOnce(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	pool, url := srv.NewDatabase(t)
	if err := Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	seed(t, pool, 1000)
	var wg sync.WaitGroup
	deleted := make([]int64, 4)
	errs := make([]error, 4)
	for i := range 4 {
		p, err := pgxpool.New(context.Background(), url) // a process of its own
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		s := openForTest(t, p, WithSweepBatch(50), WithSweepInterval(0))
		wg.Go(func() { deleted[i], errs[i] = s.Sweep(context.Background()) })
	}
	wg.Wait()
	var sum int64
	for i := range 4 {
		if errs[i] != nil {
			t.Fatalf("sweeper %d: %v", i, errs[i])
		}
		sum += deleted[i]
	}
	if sum != 2000 {
		t.Fatalf("four sweepers deleted %v rows, %d in all, want 2000 (each sweepable row once)", deleted, sum)
	}
	wantKept(t, pool, 1000)
}

// TestClaimSweepsOneBatchWhenDue: the automatic sweep runs one bounded
// statement per interval, not the whole table.
func TestClaimSweepsOneBatchWhenDue(t *testing.T) {
	t.Parallel()
	pool := migrated(t, pgtest.Start(t))
	seed(t, pool, 100)
	s := openForTest(t, pool, WithSweepBatch(30), WithSweepInterval(time.Nanosecond))
	storetest.MustClaim(t, s, "trigger", time.Minute)
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM toolreg_effector_dedup`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if want := 500 + 1 - 30; n != want {
		t.Fatalf("rows after one claim with a sweep due = %d, want %d (one batch of 30 deleted)", n, want)
	}
	quiet := openForTest(t, pool, WithSweepBatch(30), WithSweepInterval(time.Hour))
	storetest.MustClaim(t, quiet, "no-sweep", time.Minute)
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM toolreg_effector_dedup`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if want := 500 + 2 - 30; n != want {
		t.Fatalf("rows after a claim with no sweep due = %d, want %d", n, want)
	}
}
