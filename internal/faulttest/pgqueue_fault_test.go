package faulttest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"

	"github.com/beam-agents/toolreg/effector/pgqueue"
	"github.com/beam-agents/toolreg/effector/pgstore"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

// TestPostgresQueueKilledAfterCompletion serves a Postgres queue with three
// consumers (four workers each, so that acknowledgements go in batches, one
// DELETE each) into a Postgres store, and kills the first after a
// completion is durable and before its result is published and its batch
// acknowledged: the others claim its rows once their lease ends and answer
// them from the store. No intent is lost, and an intent runs twice only
// where the kill cut its completion, its result then saying the effect is
// unknown.
func TestPostgresQueueKilledAfterCompletion(t *testing.T) {
	t.Parallel()
	const (
		entries = 400
		unique  = 300
		procs   = 3
		queue   = "intents"
	)
	ctx := context.Background()
	pg := pgtest.Start(t)
	pool, url := pg.NewDatabase(t)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	ins, ids := stream("pgqueue", entries, unique, rand.New(rand.NewPCG(7, 7)))
	if err := pgqueue.Enqueue(ctx, pool, queue, ins...); err != nil {
		t.Fatal(err)
	}
	q, err := pgqueue.Open(ctx, pool, queue)
	if err != nil {
		t.Fatal(err)
	}

	fs := newFiles(t.TempDir(), "unused")
	var ps []*proc
	for i := range procs {
		args := append([]string{"-store", url, "-queue", queue, "-queue-lease", "2500ms",
			"-downstream", fs.downstream, "-kills", fs.kills, "-completes", fs.completes, "-workers", "4"}, leaseArgs...)
		if i == 0 {
			args = append(args, "-kill-at", afterComplete, "-kill-n", "8")
		}
		ps = append(ps, start(t, args...))
	}
	if !ps[0].wait(t) {
		t.Fatal("the effector to be killed exited by itself")
	}
	waiting := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM toolreg_queue_intents`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor(t, procTimeout, "every row answered", func() bool { return waiting() == 0 })
	for _, p := range ps[1:] {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if p.wait(t) {
			t.Fatal("an effector was killed")
		}
	}

	published := map[string][]intent.Result{}
	for _, id := range ids {
		r, ok, err := q.Result(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			published[id] = []intent.Result{r}
		}
	}
	calls := downstreamCalls(t, fs.downstream)
	r := tally(t, fmt.Sprintf("pgqueue, %d consumers, 1 killed %s (postgres)", procs, afterComplete), ids, calls, published)
	if killed := lines(t, fs.kills); len(killed) != 1 {
		t.Fatalf("kills.log: %q, want one kill", killed)
	}
	killedPID := ps[0].cmd.Process.Pid
	for _, id := range ids {
		cs := calls[id]
		switch {
		case len(cs) == 1:
		case len(cs) == 2 && cs[0].pid == killedPID && cs[1].pid != killedPID:
			if rs := published[id]; len(rs) == 0 || !strings.HasPrefix(rs[0].ErrorMessage, "effect unknown") {
				t.Errorf("intent %s ran in the killed consumer and again in another, but its result does not say the effect is unknown: %+v", id, rs)
			}
		default:
			t.Errorf("intent %s executed %d times (%+v), want once, or twice where the killed consumer (pid %d) ran it first", id, len(cs), cs, killedPID)
		}
	}
	r.note = fmt.Sprintf("%d rows; the killed consumer's claimed rows delivered again after their lease", entries)
	report(t, r)
}
