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
