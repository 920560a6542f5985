package faulttest

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/internal/pgtest"
)

// TestPostgresRestart crashes the Postgres server (SIGQUIT: an immediate
// shutdown, every connection cut, no checkpoint) and starts it again on the
// same data directory, twice, while two effectors work through the same
// stream on one database: the server replays its write-ahead log, so every
// claim and result it acknowledged survives, and nothing is lost or executed
// twice.
func TestPostgresRestart(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	_, url := pg.NewDatabase(t)
	const (
		entries = 300
		unique  = 250
		procs   = 2
	)
	dir := t.TempDir()
	ins, ids := stream("pg-restart", entries, unique, rand.New(rand.NewPCG(4, 4)))
	var ps []*proc
	var outs []string
	for i := range procs {
		fs := newFiles(dir, "e"+strconv.Itoa(i))
		writeIntents(t, fs.in, ins)
		outs = append(outs, fs.out)
		// 10ms in each tool: the run takes at least 250 x 10ms / 4 workers,
		// about 0.6s, so the restarts land mid-run however fast the machine.
		ps = append(ps, start(t, fs.args(url, "-workers", "2", "-lease", "10s", "-timeout", "5s", "-tool-delay", "10ms")...))
	}
	downstream := filepath.Join(dir, "downstream.log")
	restarts := 0
	for _, at := range []int{unique / 5, unique / 2} {
		waitFor(t, procTimeout, fmt.Sprintf("%d downstream calls", at), func() bool { return len(lines(t, downstream)) >= at })
		if len(lines(t, downstream)) >= unique {
			t.Fatalf("the effectors finished before the Postgres server was restarted: the test proves nothing")
		}
		pg.Restart(t)
		restarts++
	}
	retried := 0
	for _, p := range ps {
		if p.wait(t) {
			t.Fatal("an effector was killed")
		}
		retried += strings.Count(p.stderr.String(), "retrying")
	}
	calls := downstreamCalls(t, downstream)
	r := tally(t, "postgres server restarted mid-run", ids, calls, results(t, outs...))
	wantExecutedOnce(t, ids, calls, "")
	r.note = fmt.Sprintf("%d restarts, %d effectors, %d retries logged", restarts, procs, retried)
	report(t, r)
}
