package sqlitestore

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/internal/effectortest"
)

// BenchmarkClaimComplete measures one intent through the store (Claim, then
// Complete: two BEGIN IMMEDIATE transactions, two fsyncs) against the floor
// the issue names, in the same run on the same kind of file with the same
// pragmas: a bare INSERT and a bare UPDATE per intent in two transactions.
// Compare with: benchstat -col /impl.
func BenchmarkClaimComplete(b *testing.B) {
	ctx := context.Background()
	result := []byte(`{"status":1,"payload":{"ok":true}}`)

	b.Run("impl=floor", func(b *testing.B) {
		db, err := sql.Open("sqlite", dsn(filepath.Join(b.TempDir(), "floor.db"), 10*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		if _, err := db.Exec(`CREATE TABLE floor (id TEXT PRIMARY KEY NOT NULL, v BLOB) WITHOUT ROWID`); err != nil {
			b.Fatal(err)
		}
		inTx := func(query string, args ...any) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, query, args...); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		ids := effectortest.FloorIDs(200_000) // more than b.Loop runs here: a repeat would fail the INSERT
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			id := ids[i%len(ids)]
			inTx(`INSERT INTO floor (id, v) VALUES (?1, ?2)`, id, "token")
			inTx(`UPDATE floor SET v = ?2 WHERE id = ?1`, id, result)
		}
	})

	b.Run("impl=store", func(b *testing.B) {
		s, err := Open(ctx, filepath.Join(b.TempDir(), "store.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		effectortest.BenchmarkClaimComplete(b, s, result)
	})
	// One intent through effector.Process with this store.
	b.Run("impl=process", func(b *testing.B) {
		s, err := Open(ctx, filepath.Join(b.TempDir(), "process.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		effectortest.BenchmarkProcess(b, s)
	})
}

// BenchmarkProcessWorkers runs intents through effector.Process from 1, 4,
// 16 and 64 concurrent workers on one store, and reports intents/s beside two
// floors written here, on the same kind of file with the same pragmas
// (synchronous=FULL), writing the same kind of ids as the store (UUIDv5s, in
// no order: effectortest.FloorIDs): floor=tx-per-intent writes each intent's
// claim and completion (an INSERT, then an UPDATE) in one transaction of its
// own; floor=batch100 writes 100 intents' claims in one transaction, then
// their completions in another, as a perfect group commit of 100 would.
// Issue 20's goal: at 16 workers and more, at least half of batch100.
// floor=batch100-ordered-keys is batch100 with keys in order ("intent-1",
// "intent-2", ...), as this benchmark's floors wrote before: each
// transaction then dirties a few pages at the B-tree's end instead of one
// page per intent, which makes it about 3x faster than the same writes of
// the store's ids; it is kept to show that difference, not as the goal.
// impl=store-batch100 is the store's native batches doing what batch100
// does: ClaimBatch of 100 intents, then CompleteBatch of those 100.
func BenchmarkProcessWorkers(b *testing.B) {
	ctx := context.Background()
	result := []byte(`{"status":1,"payload":{"ok":true}}`)
	floorDB := func(b *testing.B) *sql.DB {
		db, err := sql.Open("sqlite", dsn(filepath.Join(b.TempDir(), "floor.db"), 10*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		db.SetMaxOpenConns(1)
		if _, err := db.Exec(`CREATE TABLE floor (id TEXT PRIMARY KEY NOT NULL, v BLOB) WITHOUT ROWID`); err != nil {
			b.Fatal(err)
		}
		return db
	}
	// tx runs fn in one transaction and commits it.
	tx := func(b *testing.B, db *sql.DB, fn func(tx *sql.Tx) error) {
		t, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := fn(t); err != nil {
			b.Fatal(err)
		}
		if err := t.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	perSec := func(b *testing.B, start time.Time) {
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "intents/s")
	}
	b.Run("impl=floor-tx-per-intent", func(b *testing.B) {
		db := floorDB(b)
		ids := effectortest.FloorIDs(b.N)
		start := time.Now()
		for _, id := range ids {
			tx(b, db, func(t *sql.Tx) error {
				if _, err := t.ExecContext(ctx, `INSERT INTO floor (id, v) VALUES (?1, ?2)`, id, "token"); err != nil {
					return err
				}
				_, err := t.ExecContext(ctx, `UPDATE floor SET v = ?2 WHERE id = ?1`, id, result)
				return err
			})
		}
		perSec(b, start)
	})
	batch100 := func(b *testing.B, ids []string) {
		db := floorDB(b)
		start := time.Now()
		for lo := 0; lo < len(ids); lo += 100 {
			batch := ids[lo:min(lo+100, len(ids))]
			tx(b, db, func(t *sql.Tx) error {
				for _, id := range batch {
					if _, err := t.ExecContext(ctx, `INSERT INTO floor (id, v) VALUES (?1, ?2)`, id, "token"); err != nil {
						return err
					}
				}
				return nil
			})
			tx(b, db, func(t *sql.Tx) error {
				for _, id := range batch {
					if _, err := t.ExecContext(ctx, `UPDATE floor SET v = ?2 WHERE id = ?1`, id, result); err != nil {
						return err
					}
				}
				return nil
			})
		}
		perSec(b, start)
	}
	b.Run("impl=floor-batch100", func(b *testing.B) {
		batch100(b, effectortest.FloorIDs(b.N))
	})
	b.Run("impl=floor-batch100-ordered-keys", func(b *testing.B) {
		ids := make([]string, b.N)
		for i := range ids {
			ids[i] = "intent-" + strconv.Itoa(i)
		}
		batch100(b, ids)
	})
	// The store's native batches, as the floor batch100 writes: ClaimBatch
	// of 100 intents, then CompleteBatch of those 100 (issue 32).
	b.Run("impl=store-batch100", func(b *testing.B) {
		s, err := Open(ctx, filepath.Join(b.TempDir(), "store.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		effectortest.BenchmarkBatch100(b, s, 1, result)
		b.ReportMetric(float64(s.group.Ops.Load())/float64(max(1, s.group.Batches.Load())), "ops/commit")
	})
	for _, workers := range []int{1, 4, 16, 64} {
		b.Run("impl=store/workers="+strconv.Itoa(workers), func(b *testing.B) {
			s, err := Open(ctx, filepath.Join(b.TempDir(), "store.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			effectortest.BenchmarkProcessWorkers(b, s, workers)
			b.ReportMetric(float64(s.group.Ops.Load())/float64(max(1, s.group.Batches.Load())), "ops/commit")
		})
	}
}
