package pgstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/internal/pgtest"
)

func TestOpenRefusesADatabaseWithoutTheSchemaAndSaysWhatToRun(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.Start(t).NewDatabase(t)
	_, err := Open(context.Background(), pool)
	var se *SchemaError
	if !errors.As(err, &se) || se.Have != 0 || se.Want != SchemaVersion {
		t.Fatalf("Open on an empty database: %v, want a *SchemaError with Have 0", err)
	}
	if !strings.Contains(err.Error(), "run pgstore.Migrate(ctx, pool)") {
		t.Fatalf("Open on an empty database: %q, want it to say to run pgstore.Migrate", err)
	}
	if err := Migrate(context.Background(), pool); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if _, err := Open(context.Background(), pool); err != nil {
		t.Fatalf("Open after Migrate: %v", err)
	}
}

func TestOpenAndMigrateRefuseANewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, pgtest.Start(t))
	if _, err := pool.Exec(ctx, `INSERT INTO toolreg_effector_schema (version) VALUES ($1)`, SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Open":    func() error { _, err := Open(ctx, pool); return err }(),
		"Migrate": Migrate(ctx, pool),
	} {
		var se *SchemaError
		if !errors.As(err, &se) || se.Have != SchemaVersion+1 {
			t.Fatalf("%s on a schema newer than this package: %v, want a *SchemaError with Have %d", name, err, SchemaVersion+1)
		}
		if !strings.Contains(err.Error(), "upgrade toolreg") {
			t.Fatalf("%s on a newer schema: %q, want it to say to upgrade toolreg", name, err)
		}
	}
}

func TestSchemaErrorForAnOlderSchemaSaysToMigrate(t *testing.T) {
	err := &SchemaError{Have: 1, Want: 2}
	if msg := err.Error(); !strings.HasPrefix(msg, "pgstore: ") || !strings.Contains(msg, "version 1") || !strings.Contains(msg, "run pgstore.Migrate(ctx, pool), or toolreg migrate with the database's URL, to upgrade") {
		t.Fatalf("SchemaError{1, 2} = %q, want it to name both versions and say to run Migrate", msg)
	}
}

// TestConcurrentMigrations: processes starting at once all migrate; the
// advisory lock makes them take turns, so the tables are made once and no
// call fails.
func TestConcurrentMigrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := pgtest.Start(t).NewDatabase(t)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() { errs[i] = Migrate(ctx, pool) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Migrate %d of %d at once: %v", i, len(errs), err)
		}
	}
	var rows, version int
	if err := pool.QueryRow(ctx, `SELECT count(*), max(version) FROM toolreg_effector_schema`).Scan(&rows, &version); err != nil {
		t.Fatal(err)
	}
	if rows != SchemaVersion || version != SchemaVersion {
		t.Fatalf("after concurrent migrations the schema table has %d rows up to version %d, want one row per version up to %d", rows, version, SchemaVersion)
	}
	if err := Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
}

func TestBadArgumentsAreRefusedWithWhatToDo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := Open(ctx, nil); err == nil || !strings.Contains(err.Error(), "pgstore: Open with a nil pool") {
		t.Fatalf("Open(nil) = %v, want an error naming the nil pool", err)
	}
	pool := migrated(t, pgtest.Start(t))
	if _, err := Open(ctx, pool, WithSweepBatch(0)); err == nil || !strings.Contains(err.Error(), "sweep batch 0") {
		t.Fatalf("Open with a sweep batch of 0 = %v, want it refused", err)
	}
	s := openForTest(t, pool)
	if _, err := s.Claim(ctx, "i", call, 0); err == nil || !strings.Contains(err.Error(), "pgstore: lease 0s: want a positive duration") {
		t.Fatalf("Claim with a zero lease = %v, want it refused", err)
	}
	if err := s.Complete(ctx, "i", "t", nil, -time.Second); err == nil || !strings.Contains(err.Error(), "pgstore: result ttl -1s") {
		t.Fatalf("Complete with a negative ttl = %v, want it refused", err)
	}
}
