package pgqueue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/pgqueue"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

// countStatements makes the server count the statements that write results
// (failed ones too: a sequence is not rolled back), each taking sleep, and
// fail the first failFirst of them. It returns what reads the count.
func countStatements(t *testing.T, pool *pgxpool.Pool, sleep time.Duration, failFirst int) func() int {
	t.Helper()
	ctx := context.Background()
	for _, sql := range []string{
		`CREATE SEQUENCE result_statements`,
		fmt.Sprintf(`CREATE FUNCTION count_result_statement() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF nextval('result_statements') <= %d THEN
				RAISE EXCEPTION 'injected: the write of these results fails';
			END IF;
			PERFORM pg_sleep(%f);
			RETURN NULL;
		END $$`, failFirst, sleep.Seconds()),
		`CREATE TRIGGER count_result_statement BEFORE INSERT ON toolreg_queue_results
			FOR EACH STATEMENT EXECUTE FUNCTION count_result_statement()`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	return func() int {
		return count(t, pool, `SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM result_statements`)
	}
}

func okResult(id string) intent.Result {
	return intent.Result{IntentID: id, Status: intent.StatusOK, Payload: []byte(`{"n":1}`)}
}

func stageAll(t *testing.T, sink *pgqueue.Sink, ids []string) []func() error {
	t.Helper()
	waits := make([]func() error, len(ids))
	for i, id := range ids {
		w, err := sink.Stage(context.Background(), okResult(id))
		if err != nil {
			t.Fatalf("Stage %s: %v", id, err)
		}
		waits[i] = w
	}
	return waits
}

func stagedIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

func TestStagedResults(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)

	// The first wait writes every result staged by then in one statement;
	// the other waits of it return at once, with no statement of their own;
	// a later statement commits after an earlier one.
	t.Run("results staged before a wait share one statement and later ones commit after them", func(t *testing.T) {
		t.Parallel()
		pool, _, q := setup(t, srv)
		statements := countStatements(t, pool, 0, 0)
		sink := q.Sink()
		first := stagedIDs("first", 50)
		waits := stageAll(t, sink, first)
		if n := statements(); n != 0 {
			t.Fatalf("%d statements before any wait: Stage must only queue", n)
		}
		if err := waits[len(waits)-1](); err != nil { // the last staged waits first
			t.Fatal(err)
		}
		if n, r := statements(), results(t, pool); n != 1 || r != len(first) {
			t.Fatalf("%d statements, %d rows for %d staged results; want 1 and %d", n, r, len(first), len(first))
		}
		for i, w := range waits {
			if err := w(); err != nil {
				t.Fatalf("wait %d: %v", i, err)
			}
		}
		if n := statements(); n != 1 {
			t.Fatalf("%d statements after every wait, want still 1: a written result's wait must return at once", n)
		}
		for _, w := range stageAll(t, sink, stagedIDs("second", 5)) {
			if err := w(); err != nil {
				t.Fatal(err)
			}
		}
		if n := count(t, pool, `SELECT count(*) FROM toolreg_queue_results f, toolreg_queue_results s
			WHERE f.intent_id::text LIKE '%' || encode('first', 'hex') || '%' AND s.intent_id::text LIKE '%' || encode('second', 'hex') || '%'
			AND f.published_at >= s.published_at`); n != 0 {
			t.Fatalf("%d pairs of a first-staged result published no earlier than a later-staged one, want 0", n)
		}
		if r := resultOf(t, q, "first-007"); string(r.Payload) != `{"n":1}` || r.Status != intent.StatusOK {
			t.Fatalf("result read back: %+v", r)
		}
	})

	// A statement the server refuses fails every wait of it and writes
	// nothing (one statement, all or nothing); published again, each result
	// has one row.
	t.Run("a failed statement fails every wait of it and writes nothing", func(t *testing.T) {
		t.Parallel()
		pool, _, q := setup(t, srv)
		statements := countStatements(t, pool, 0, 1)
		sink := q.Sink()
		want := stagedIDs("fail", 20)
		for i, w := range stageAll(t, sink, want) {
			if err := w(); err == nil || !strings.Contains(err.Error(), "injected") || !strings.Contains(err.Error(), "pgqueue: publishing the result of intent") {
				t.Fatalf("wait %d: %v, want the statement's error", i, err)
			}
		}
		if n, r := statements(), results(t, pool); n != 1 || r != 0 {
			t.Fatalf("%d statements, %d rows; want 1 and none", n, r)
		}
		for _, id := range want {
			if err := sink.Publish(context.Background(), okResult(id)); err != nil {
				t.Fatalf("Publish again: %v", err)
			}
		}
		if r := results(t, pool); r != len(want) {
			t.Fatalf("%d rows, want %d", r, len(want))
		}
	})

	// Stagers on many goroutines share statements, and every result is
	// written once.
	t.Run("many concurrent stagers share statements", func(t *testing.T) {
		t.Parallel()
		pool, _, q := setup(t, srv)
		statements := countStatements(t, pool, 0, 0)
		sink := q.Sink()
		const stagers, each = 8, 50
		var wg sync.WaitGroup
		for g := range stagers {
			wg.Go(func() {
				var waits []func() error
				for i := range each {
					w, err := sink.Stage(context.Background(), okResult(fmt.Sprintf("g%d-%03d", g, i)))
					if err != nil {
						t.Error(err)
						return
					}
					waits = append(waits, w)
					if i%10 == 9 {
						for k := len(waits) - 1; k >= 0; k-- {
							if err := waits[k](); err != nil {
								t.Error(err)
							}
						}
						waits = waits[:0]
					}
				}
			})
		}
		wg.Wait()
		if r := results(t, pool); r != stagers*each {
			t.Fatalf("%d rows, want %d", r, stagers*each)
		}
		if n := statements(); n > stagers*each/10 {
			t.Fatalf("%d statements for %d results waited for in groups of 10: stagers do not share them", n, stagers*each)
		}
	})

	// Stage refuses a context that has ended; a result whose stager gave up
	// between Stage and wait is left out of the write, the others not; on a
	// closed pool the wait fails saying which result.
	t.Run("a stage after its context ended or its pool closed", func(t *testing.T) {
		t.Parallel()
		pool, url, q := setup(t, srv)
		sink := q.Sink()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if w, err := sink.Stage(ctx, okResult("cancelled")); !errors.Is(err, context.Canceled) || w != nil {
			t.Fatalf("Stage with a cancelled context: %v, want context.Canceled and no wait", err)
		}
		ending, end := context.WithCancel(context.Background())
		wGone, err := sink.Stage(ending, okResult("gone"))
		if err != nil {
			t.Fatal(err)
		}
		wKept := stageAll(t, sink, []string{"kept"})[0]
		end()
		if err := wGone(); !errors.Is(err, context.Canceled) {
			t.Fatalf("wait of a result whose context ended: %v, want context.Canceled", err)
		}
		if err := wKept(); err != nil {
			t.Fatal(err)
		}
		if r := results(t, pool); r != 1 {
			t.Fatalf("%d rows, want only kept's", r)
		}

		closing := newPool(t, url, "closing")
		cq := openQueue(t, closing)
		closing.Close()
		w, err := cq.Sink().Stage(context.Background(), okResult("after-close"))
		if err != nil {
			t.Fatal(err)
		}
		if err := w(); err == nil || !strings.Contains(err.Error(), `intent "after-close"`) || !strings.Contains(err.Error(), "closed") {
			t.Fatalf("wait on a closed pool: %v, want an error naming the intent and the closed pool", err)
		}
	})

	// Serve over N intents writes their results in far fewer statements
	// than N: each statement takes 10ms, and results staged meanwhile share
	// the next. One INSERT per result would take N.
	t.Run("Serve writes results in fewer statements than intents", func(t *testing.T) {
		t.Parallel()
		pool, _, q := setup(t, srv)
		statements := countStatements(t, pool, 10*time.Millisecond, 0)
		const n = 300
		ins, ids := intents("statements", n)
		enqueue(t, pool, ins...)
		e, _ := effectortest.Effector(t, openStore(t, pool))
		err := serveUntil(t, newSource(t, q, pgqueue.WithBatch(100)), q.Sink(), e, func() bool {
			return results(t, pool) == n && waiting(t, pool) == 0
		}, effector.WithWorkers(16))
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		for _, id := range ids {
			resultOf(t, q, id)
		}
		if s := statements(); s > n/4 {
			t.Fatalf("%d statements for %d results, want at most %d", s, n, n/4)
		}
		t.Logf("%d statements for %d results", statements(), n)
	})

	// When a staged statement fails, every wait of it fails and Serve
	// publishes those results again through Publish: every intent has its
	// result, once (the results table keeps the first per intent id), and
	// is acknowledged.
	t.Run("Serve publishes the results of a failed statement again", func(t *testing.T) {
		t.Parallel()
		pool, _, q := setup(t, srv)
		statements := countStatements(t, pool, 0, 1)
		const n = 100
		ins, ids := intents("republish", n)
		enqueue(t, pool, ins...)
		e, calls := effectortest.Effector(t, openStore(t, pool))
		err := serveUntil(t, newSource(t, q), q.Sink(), e, func() bool {
			return results(t, pool) == n && waiting(t, pool) == 0
		})
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		if statements() < 2 {
			t.Fatalf("%d statements: the failed one was not followed by another", statements())
		}
		for _, id := range ids {
			if resultOf(t, q, id); calls.Of(id) != 1 {
				t.Errorf("intent %s: %d executions, want 1", id, calls.Of(id))
			}
		}
	})
}

// The server stopping between Stage and wait fails every wait of the write;
// once it is back, the results publish.
func TestAStagedWriteFailsWhileTheServerIsDown(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	pool, _, q := setup(t, srv)
	sink := q.Sink()
	want := stagedIDs("down", 20)
	waits := stageAll(t, sink, want)
	srv.Stop()
	for i, w := range waits {
		if err := w(); err == nil {
			t.Fatalf("wait %d returned nil with the server down", i)
		}
	}
	srv.Restart(t)
	for _, id := range want {
		if err := sink.Publish(context.Background(), okResult(id)); err != nil {
			t.Fatalf("Publish after the restart: %v", err)
		}
	}
	if r := results(t, pool); r != len(want) {
		t.Fatalf("%d rows, want %d", r, len(want))
	}
}
