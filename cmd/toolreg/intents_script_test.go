package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
)

// TestIntentsScript runs testdata/intents/*.txtar against real SQLite files
// that the seedstore command fills: an intent done, one whose claim lapsed
// (effect unknown), and one still leased.
func TestIntentsScript(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "intents"),
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		Cmds:                map[string]func(*testscript.TestScript, bool, []string){"seedstore": seedStore},
	})
}

// seedstore PATH: done-1 (refund, done), lapsed-1 (refund, unknown),
// leased-1 (email, in flight for an hour).
func seedStore(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: seedstore PATH")
	}
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, ts.MkAbs(args[0]))
	ts.Check(err)
	defer s.Close()
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
