package pgstore

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

// migrated is a fresh database on srv with the store's tables.
func migrated(t testing.TB, srv *pgtest.Server) *pgxpool.Pool {
	t.Helper()
	pool, _ := srv.NewDatabase(t)
	if err := Migrate(context.Background(), pool); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return pool
}

func openForTest(t testing.TB, pool *pgxpool.Pool, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), pool, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	pool := migrated(t, pgtest.Start(t))
	// One database for the whole suite: every subtest uses ids of its own.
	storetest.Run(t, func(t *testing.T) effector.DedupStore {
		return openForTest(t, pool)
	})
}
