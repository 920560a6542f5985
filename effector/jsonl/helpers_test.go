package jsonl_test

import (
	"context"
	"testing"

	"github.com/beam-agents/toolreg/effector/sqlitestore"
)

// serveStore opens a SQLite store at path until the test ends. (It stays
// here and in package effector's tests, not in internal/effectortest:
// sqlitestore's own in-package tests import effectortest.)
func serveStore(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("sqlitestore.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
