package main

import (
	"context"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/beam-agents/toolreg/effector"
)

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
