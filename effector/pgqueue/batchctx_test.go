package pgqueue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector/pgstore"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/groupcommit"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

// TestOneCallerGivingUpFailsOnlyItsOwnOpInASharedBatch: acknowledgements
// and results share one statement; a caller whose context ended before the
// batch ran must not take the others' ops down with it, whichever place in
// the batch it has.
func TestOneCallerGivingUpFailsOnlyItsOwnOpInASharedBatch(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, _ := pgtest.Start(t).NewDatabase(t)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	q, err := Open(ctx, pool, "effects")
	if err != nil {
		t.Fatal(err)
	}
	ins := []*intent.Intent{effectortest.Intent("a", 1, 0), effectortest.Intent("b", 1, 0)}
	if err := Enqueue(ctx, pool, q.name, ins...); err != nil {
		t.Fatal(err)
	}
	s, err := q.NewSource()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.claim(ctx); err != nil || len(s.buf) != 2 {
		t.Fatalf("claim: %v, %d rows, want 2", err, len(s.buf))
	}
	gone, stop := context.WithCancel(ctx)
	stop()

	// The ended op sorts first, so its context would be the statement's.
	live := &groupcommit.Op[ackIn]{Ctx: ctx, In: ackIn{s.buf[1].id, s.buf[1].token}}
	ended := &groupcommit.Op[ackIn]{Ctx: gone, In: ackIn{s.buf[0].id, s.buf[0].token}}
	s.commitAcks([]*groupcommit.Op[ackIn]{live, ended})
	if !errors.Is(ended.Err, context.Canceled) || live.Err != nil {
		t.Fatalf("acks: ended caller's %v, live caller's %v; want context.Canceled and nil", ended.Err, live.Err)
	}
	var left []int64
	rows, _ := pool.Query(ctx, `SELECT id FROM toolreg_queue_intents`)
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		left = append(left, id)
	}
	if rows.Err() != nil || len(left) != 1 || left[0] != s.buf[0].id {
		t.Fatalf("rows left %v (%v), want only the ended caller's %d", left, rows.Err(), s.buf[0].id)
	}

	// A staged result whose caller gives up before the write is left out
	// of it; the other is written.
	sink := q.Sink()
	ending, end := context.WithCancel(ctx)
	waitEnded, err := sink.Stage(ending, intent.Result{IntentID: ins[0].ID, Status: intent.StatusOK})
	if err != nil {
		t.Fatal(err)
	}
	waitLive, err := sink.Stage(ctx, intent.Result{IntentID: ins[1].ID, Status: intent.StatusOK})
	if err != nil {
		t.Fatal(err)
	}
	end()
	if endedErr, liveErr := waitEnded(), waitLive(); !errors.Is(endedErr, context.Canceled) || liveErr != nil {
		t.Fatalf("publish: ended caller's %v, live caller's %v; want context.Canceled and nil", endedErr, liveErr)
	}
	if _, ok, err := q.Result(ctx, ins[1].ID); !ok || err != nil {
		t.Fatalf("live caller's result: found %v, %v; want it written", ok, err)
	}
	if _, ok, err := q.Result(ctx, ins[0].ID); ok || err != nil {
		t.Fatalf("ended caller's result: found %v, %v; want none", ok, err)
	}
}
