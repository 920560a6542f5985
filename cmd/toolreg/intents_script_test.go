package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/pgstore"
	"github.com/beam-agents/toolreg/internal/pgtest"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// TestIntentsScript runs testdata/intents/*.txtar against real SQLite files
// a real redis-server ($REDIS_URL) and a real Postgres ($PG_URL) that the seedstore command fills: an intent done, one whose claim lapsed
// (effect unknown), and one still leased.
func TestIntentsScript(t *testing.T) {
	t.Parallel()
	redisURL := "redis://" + redistest.Start(t).Addr
	pool, pgURL := pgtest.Start(t).NewDatabase(t)
	if err := pgstore.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "intents"),
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			e.Setenv("REDIS_URL", redisURL)
			e.Setenv("PG_URL", pgURL)
			return nil
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){"seedstore": seedStore, "waitfile": waitFile},
	})
}

// seedstore PATH|URL: done-1 (refund, done), lapsed-1 (refund, unknown),
// leased-1 (email, in flight for an hour).
func seedStore(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: seedstore PATH")
	}
	ctx := context.Background()
	s, closeStore := openStore(ts, args[0]) // approvals_script_test.go
	defer closeStore()
	claim := func(id, tool string, lease time.Duration) effector.Claim {
		c, err := s.Claim(ctx, id, effector.NewCall(tool, []byte(`{}`)), lease)
		ts.Check(err)
		if c.State != effector.Claimed {
			ts.Fatalf("claim %s: %v", id, c.State)
		}
		return c
	}
	c := claim("done-1", "refund", time.Minute)
	ts.Check(s.Complete(ctx, "done-1", c.Token, []byte{0x0a, 0x06, 'd', 'o', 'n', 'e', '-', '1', 0x20, 0x01}, time.Hour))
	claim("lapsed-1", "refund", time.Millisecond)
	claim("leased-1", "email", time.Hour)
	time.Sleep(20 * time.Millisecond)
}
