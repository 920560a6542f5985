package sqlitestore

import (
	"context"
	"database/sql"
	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkClaimComplete measures one intent through the store (Claim, then
// Complete: two BEGIN IMMEDIATE transactions, two fsyncs) against the floor
// the issue names, in the same run on the same kind of file with the same
// pragmas: a bare INSERT and a bare UPDATE per intent in two transactions.
// Compare with: benchstat -col /impl.
// rounds keeps intent ids fresh across the rounds and -count repetitions of
// a benchmark, which share one store.
var rounds atomic.Int64

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
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			id := "intent-" + strconv.Itoa(i)
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
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			id := "intent-" + strconv.Itoa(i)
			c, err := s.Claim(ctx, id, time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Complete(ctx, id, c.Token, result, time.Hour); err != nil {
				b.Fatal(err)
			}
		}
	})
	// One intent through effector.Process with this store: claim, argument
	// validation, the tool (a no-op that records its call), encoding the
	// result, complete.
	b.Run("impl=process", func(b *testing.B) {
		s, err := Open(ctx, filepath.Join(b.TempDir(), "process.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		e, calls := effectortest.Effector(b, s)
		intents := make([]*toolreg.Intent, b.N)
		for i := range intents {
			intents[i] = effectortest.Intent("bench", rounds.Add(1), uint32(i)) // fresh ids per round
		}
		b.ReportAllocs()
		b.ResetTimer()
		for _, in := range intents {
			if res, err := e.Process(ctx, in); err != nil || res.Status != toolreg.StatusOK {
				b.Fatalf("Process = %s %q, %v", res.Status, res.ErrorMessage, err)
			}
		}
		b.StopTimer()
		if got := calls.Total(); got != b.N {
			b.Fatalf("the tool ran %d times for %d intents", got, b.N)
		}
	})
}
