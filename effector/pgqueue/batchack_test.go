package pgqueue_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/pgqueue"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

// deleteCounter counts the statements that delete queue rows.
type deleteCounter struct{ n atomic.Int32 }

func (c *deleteCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, "DELETE FROM toolreg_queue_intents") {
		c.n.Add(1)
	}
	return ctx
}

func (c *deleteCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// tracedPool is a pool of its own on url whose row deletions c counts.
func tracedPool(t *testing.T, url string, c *deleteCounter) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// retrying runs f until it returns nil, at most 20 times: after a server
// crash a pool holds broken connections, and each failure discards one (as
// Serve's backoff would ride them out).
func retrying(t *testing.T, what string, f func() error) {
	t.Helper()
	var err error
	for range 20 {
		if err = f(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: still failing after the server came back: %v", what, err)
}

// countRetrying is count, asked again while it fails.
func countRetrying(t *testing.T, pool *pgxpool.Pool, query string) int {
	t.Helper()
	var n int
	retrying(t, query, func() error { return pool.QueryRow(context.Background(), query).Scan(&n) })
	return n
}

const waitingSQL, resultsSQL = `SELECT count(*) FROM toolreg_queue_intents`, `SELECT count(*) FROM toolreg_queue_results`

// receiveN takes n deliveries from src.
func receiveN(t *testing.T, ctx context.Context, src *pgqueue.Source, n int) []effector.Delivery {
	t.Helper()
	var ds []effector.Delivery
	for len(ds) < n {
		var err error
		if ds, err = src.ReceiveBatch(ctx, n-len(ds), ds); err != nil {
			t.Fatal(err)
		}
	}
	return ds
}

// AckBatch deletes a batch's rows in one statement, each only where its
// claim still holds: rows taken over after their lease lapsed stay for their
// new owner, whose own AckBatch deletes them. Acknowledging again through
// Ack is harmless, and a batch with a delivery the source did not hand out
// is refused whole.
func TestAckBatchDeletesInOneStatementFencedByEachClaim(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool, url, _ := setup(t, pgtest.Start(t))
	ins, _ := intents("ackbatch", 6)
	enqueue(t, pool, ins...)
	var deletes deleteCounter
	q := openQueue(t, tracedPool(t, url, &deletes))
	slow := newSource(t, q, pgqueue.WithLease(100*time.Millisecond), pgqueue.WithBatch(6))
	ds := receiveN(t, ctx, slow, 6)
	for _, d := range ds {
		if d.Acker != slow {
			t.Fatalf("delivery %s has Acker %v, want its source", d.Pos, d.Acker)
		}
	}
	time.Sleep(150 * time.Millisecond)
	owner := newSource(t, q, pgqueue.WithBatch(2))
	taken := receiveN(t, ctx, owner, 2) // the lapsed leases of the first two rows

	foreign := ds[2]
	foreign.Intent = effectortest.Intent("ackbatch", 1, 2) // same id, not the one handed out
	if err := slow.AckBatch(ctx, []effector.Delivery{ds[3], foreign}); err == nil {
		t.Fatal("AckBatch took a delivery it did not hand out")
	}
	if err := owner.AckBatch(ctx, ds[2:4]); err == nil {
		t.Fatal("another source's AckBatch took this source's deliveries")
	}
	if n := waiting(t, pool); n != 6 {
		t.Fatalf("%d rows after refused batches, want all 6", n)
	}

	before := deletes.n.Load()
	if err := slow.AckBatch(ctx, ds); err != nil {
		t.Fatalf("AckBatch: %v", err)
	}
	if got := deletes.n.Load() - before; got != 1 {
		t.Errorf("AckBatch of 6 rows ran %d deleting statements, want 1", got)
	}
	if n := waiting(t, pool); n != 2 {
		t.Fatalf("%d rows after the lapsed owner's batch, want the 2 its new owner holds", n)
	}
	for _, d := range ds {
		if err := d.Ack(ctx); err != nil {
			t.Fatalf("Ack of %s after its batch: %v", d.Pos, err)
		}
	}
	if n := waiting(t, pool); n != 2 {
		t.Fatalf("%d rows after the lapsed owner's acks, want 2", n)
	}
	if err := owner.AckBatch(ctx, taken); err != nil {
		t.Fatalf("the new owner's AckBatch: %v", err)
	}
	if n := waiting(t, pool); n != 0 {
		t.Fatalf("%d rows after the owner's batch, want 0", n)
	}
}

// An AckBatch while the server is down fails and deletes nothing; once the
// server is back, each delivery's Ack (Serve's fallback) deletes its row.
func TestAckBatchWhileTheServerIsDownDeletesNothing(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := pgtest.Start(t)
	pool, _, q := setup(t, srv)
	ins, _ := intents("down", 5)
	enqueue(t, pool, ins...)
	src := newSource(t, q, pgqueue.WithBatch(5))
	ds := receiveN(t, ctx, src, 5)
	srv.Stop()
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := src.AckBatch(actx, ds)
	cancel()
	if err == nil {
		t.Fatal("AckBatch with the server down returned nil")
	}
	srv.Restart(t)
	if n := countRetrying(t, pool, waitingSQL); n != 5 {
		t.Fatalf("%d rows after the failed AckBatch, want all 5", n)
	}
	for _, d := range ds {
		retrying(t, "Ack of "+d.Pos, func() error { return d.Ack(ctx) })
	}
	if n := countRetrying(t, pool, waitingSQL); n != 0 {
		t.Fatalf("%d rows after every Ack, want 0", n)
	}
}

// Serve over a queue whose server crashes and comes back while intents are
// being answered answers each exactly once: one result, one run, no row
// left.
func TestServeAnswersEveryIntentOnceAcrossAServerCrash(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	pool, _, q := setup(t, srv)
	ins, ids := intents("crash", 120)
	enqueue(t, pool, ins...)
	e, calls := effectortest.Effector(t, openStore(t, pool), effector.WithTimeout(time.Second), effector.WithLease(30*time.Second))
	crashed := false
	err := serveUntil(t, newSource(t, q), q.Sink(), e, func() bool {
		if !crashed && countRetrying(t, pool, resultsSQL) >= 20 {
			crashed = true
			srv.Restart(t)
		}
		return countRetrying(t, pool, waitingSQL) == 0
	})
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if n := countRetrying(t, pool, resultsSQL); n != len(ids) {
		t.Errorf("%d results for %d intents", n, len(ids))
	}
	for _, id := range ids {
		if r := resultOf(t, q, id); calls.Of(id) != 1 {
			t.Errorf("intent %s: %v after %d executions; want 1", id, r.Status, calls.Of(id))
		}
	}
}

// A consumer that starts on an empty queue table, as a new deployment's
// does, claims and acknowledges many small batches, and then the table
// grows past 100,000 rows (a backlog of other queues, no ANALYZE yet): its
// claims, acknowledgements and giving back must still read only their own
// rows, with no sequential scan of the table. A statement prepared once
// and run through the generic plan Postgres keeps after five runs would
// go on joining the table as it was when small: every row of it, every
// batch.
func TestAQueueFindsItsRowsByTheKeyAfterTheTableGrew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, url, _ := setup(t, pgtest.Start(t))
	pool := pgtest.SmallPool(t, url, 2)
	q := openQueue(t, pool)
	src := newSource(t, q, pgqueue.WithBatch(4))
	round := func(entity string, n int) {
		t.Helper()
		ins, _ := intents(entity, n)
		if err := pgqueue.Enqueue(ctx, pool, queueName, ins...); err != nil {
			t.Fatal(err)
		}
		var ds []effector.Delivery
		for len(ds) < n {
			got, err := src.ReceiveBatch(ctx, n-len(ds), nil)
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, got...)
		}
		if err := src.AckBatch(ctx, ds); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 { // past Postgres's five custom plans, on each connection
		round(fmt.Sprintf("small%d", i), 4)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO toolreg_queue_intents (queue, intent, visible_at)
		SELECT 'backlog', '\x00'::bytea, clock_timestamp() + interval '1 hour' FROM generate_series(1, 100000)`); err != nil {
		t.Fatal(err)
	}
	seq0, idx0 := pgtest.Scans(t, pool, "toolreg_queue_intents")
	for i := range 4 {
		round(fmt.Sprintf("large%d", i), 4)
	}
	// Claimed and never handed out: Close gives them back.
	ins, _ := intents("left", 8)
	if err := pgqueue.Enqueue(ctx, pool, queueName, ins...); err != nil {
		t.Fatal(err)
	}
	if _, err := src.ReceiveBatch(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(ctx); err != nil {
		t.Fatal(err)
	}
	seq1, idx1 := pgtest.Scans(t, pool, "toolreg_queue_intents")
	if idx1 == idx0 {
		t.Fatal("the batches after the table grew made no index scan: the test sees no statistics")
	}
	if seq1 != seq0 {
		t.Errorf("the claims and acknowledgements after the table grew to 100,000 rows scanned it whole %d times: a plan made for the empty table", seq1-seq0)
	}
}
