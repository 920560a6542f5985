package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/beam-agents/toolreg/effector/pgstore"
	"github.com/beam-agents/toolreg/internal/natstest"
	"github.com/beam-agents/toolreg/internal/pgtest"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// TestStoreScripts runs the scripts that need real stores against one
// redis-server, one Postgres server and one three-node NATS JetStream
// cluster, started once for all of them:
// testdata/approvals/*.txtar (stageapprovals fills the store with approvals
// an effector recorded) and testdata/intents/*.txtar (seedstore fills it
// with an intent done, one whose claim lapsed, and one still leased). Each
// directory gets its own Postgres database ($PG_URL), redis database
// ($REDIS_URL) and JetStream bucket ($NATS_URL), so one's records never show in the other's listings; SQLite
// files live in each script's work directory.
func TestStoreScripts(t *testing.T) {
	t.Parallel()
	rds := redistest.Start(t)
	pg := pgtest.Start(t)
	nats := natstest.Start(t)
	type cmds = map[string]func(*testscript.TestScript, bool, []string)
	for i, dir := range []struct {
		name string
		cmds cmds
	}{
		{"approvals", cmds{"stageapprovals": stageApprovals, "resume": resumeApproval}},
		{"intents", cmds{"seedstore": seedStore, "waitfile": waitFile}},
	} {
		redisURL := fmt.Sprintf("redis://%s/%d", rds.Addr, i)
		natsURL := fmt.Sprintf("nats://%s/%s", strings.Join(nats.Hosts(), ","), dir.name)
		pool, pgURL := pg.NewDatabase(t)
		if err := pgstore.Migrate(context.Background(), pool); err != nil {
			t.Fatal(err)
		}
		t.Run(dir.name, func(t *testing.T) {
			t.Parallel()
			testscript.Run(t, testscript.Params{
				Dir:                 filepath.Join("testdata", dir.name),
				UpdateScripts:       *update,
				RequireExplicitExec: true,
				Setup: func(e *testscript.Env) error {
					e.Setenv("REDIS_URL", redisURL)
					e.Setenv("PG_URL", pgURL)
					e.Setenv("NATS_URL", natsURL)
					return nil
				},
				Cmds: dir.cmds,
			})
		})
	}
}
