package pgqueue_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/pgqueue"
	"github.com/beam-agents/toolreg/effector/pgstore"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

const queueName = "effects"

// setup makes a migrated database of its own on srv and opens the queue.
func setup(t *testing.T, srv *pgtest.Server) (*pgxpool.Pool, string, *pgqueue.Queue) {
	t.Helper()
	pool, url := srv.NewDatabase(t)
	if err := pgstore.Migrate(context.Background(), pool); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return pool, url, openQueue(t, pool)
}

func openQueue(t *testing.T, pool *pgxpool.Pool) *pgqueue.Queue {
	t.Helper()
	q, err := pgqueue.Open(context.Background(), pool, queueName)
	if err != nil {
		t.Fatalf("pgqueue.Open: %v", err)
	}
	return q
}

// newPool is a pool of its own on url, as another process would have.
func newPool(t *testing.T, url, app string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url+"&pool_max_conns=12&application_name="+app)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func openStore(t *testing.T, pool *pgxpool.Pool) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), pool)
	if err != nil {
		t.Fatalf("pgstore.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newSource(t *testing.T, q *pgqueue.Queue, opts ...pgqueue.Option) *pgqueue.Source {
	t.Helper()
	opts = append([]pgqueue.Option{pgqueue.WithPollInterval(50 * time.Millisecond), pgqueue.WithLogger(quiet)}, opts...)
	s, err := q.NewSource(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// intents makes n intents of entity and returns them with their ids.
func intents(entity string, n int) ([]*intent.Intent, []string) {
	ins := make([]*intent.Intent, n)
	ids := make([]string, n)
	for i := range n {
		ins[i] = effectortest.Intent(entity, 1, uint32(i))
		ids[i] = ins[i].ID
	}
	return ins, ids
}

func enqueue(t *testing.T, pool *pgxpool.Pool, ins ...*intent.Intent) {
	t.Helper()
	if err := pgqueue.Enqueue(context.Background(), pool, queueName, ins...); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
}

func count(t *testing.T, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func waiting(t *testing.T, pool *pgxpool.Pool) int {
	return count(t, pool, `SELECT count(*) FROM toolreg_queue_intents`)
}

func results(t *testing.T, pool *pgxpool.Pool) int {
	return count(t, pool, `SELECT count(*) FROM toolreg_queue_results`)
}

// resultOf reads the published result of id, failing if there is none.
func resultOf(t *testing.T, q *pgqueue.Queue, id string) intent.Result {
	t.Helper()
	r, ok, err := q.Result(context.Background(), id)
	if err != nil || !ok {
		t.Fatalf("Result(%s) = %v, %v: want a published result", id, ok, err)
	}
	return r
}

var quiet = slog.New(slog.DiscardHandler)

// serveUntil runs Serve in the background until cond holds, then stops it
// and returns its error. If Serve stops first, it returns that error at once
// (failing the test if there is none); if a minute passes first (generous,
// for a loaded 2-core machine under the race detector), it fails the test.
func serveUntil(t *testing.T, src effector.Source, sink effector.Sink, p effector.Processor, cond func() bool, opts ...effector.ServeOption) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	opts = append([]effector.ServeOption{effector.WithWorkers(4), effector.WithServeLogger(quiet),
		effector.WithRetryBackoff(5*time.Millisecond, 50*time.Millisecond)}, opts...)
	go func() { done <- effector.Serve(ctx, src, sink, p, opts...) }()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("Serve returned nil before the test's condition held, while its context was live")
			}
			return err
		case <-deadline.C:
			cancel()
			<-done
			t.Fatal("Serve did not get there within a minute")
		case <-tick.C:
		}
	}
	cancel()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop within 10s of its context ending")
		return nil
	}
}

func TestServeOverPostgres(t *testing.T) {
	t.Parallel()
	pool, _, q := setup(t, pgtest.Start(t))
	ins, ids := intents("serve", 40)
	enqueue(t, pool, ins...)
	e, calls := effectortest.Effector(t, openStore(t, pool))
	err := serveUntil(t, newSource(t, q), q.Sink(), e, func() bool {
		return results(t, pool) == len(ids) && waiting(t, pool) == 0
	})
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	for _, id := range ids {
		if r := resultOf(t, q, id); r.Status != intent.StatusOK || calls.Of(id) != 1 {
			t.Errorf("intent %s: result %v, %d executions; want OK and 1", id, r.Status, calls.Of(id))
		}
	}
}

// TestANotificationWakesAnIdleSource: with polling an hour apart, only the
// enqueuing transaction's NOTIFY can hand the intent over in time; and it
// is delivered only once that transaction commits.
func TestANotificationWakesAnIdleSource(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool, _, q := setup(t, pgtest.Start(t))
	src := newSource(t, q, pgqueue.WithPollInterval(time.Hour))
	got := make(chan effector.Delivery, 1)
	go func() {
		d, err := src.Receive(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- d
	}()
	time.Sleep(300 * time.Millisecond) // the source has claimed nothing and sleeps
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in := effectortest.Intent("notify", 1, 0)
	if err := pgqueue.Enqueue(ctx, tx, queueName, in); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-got:
		t.Fatalf("delivered %s before the enqueuing transaction committed", d.Pos)
	case <-time.After(300 * time.Millisecond):
	}
	start := time.Now()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-got:
		if d.Intent == nil || d.Intent.ID != in.ID || d.Deliveries != 1 {
			t.Fatalf("delivery %+v: want intent %s, first delivery", d, in.ID)
		}
		t.Logf("delivered %v after the commit", time.Since(start))
	case <-time.After(10 * time.Second):
		t.Fatal("an idle source polling hourly did not get an intent within 10s of its commit: no notification woke it")
	}
}

// TestOutbox: intents enqueued in the pipeline's own transaction exist only
// if it commits.
func TestOutbox(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool, _, q := setup(t, pgtest.Start(t))
	if _, err := pool.Exec(ctx, `CREATE TABLE orders (id text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	// step is the pipeline's step: its own write and its intents, in one
	// transaction that fails after both when fail is set.
	step := func(order string, fail bool) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO orders (id) VALUES ($1)`, order); err != nil {
				return err
			}
			ins, _ := intents(order, 3)
			if err := pgqueue.Enqueue(ctx, tx, queueName, ins...); err != nil {
				return err
			}
			if fail {
				return errors.New("the pipeline failed after staging")
			}
			return nil
		})
	}
	if err := step("rolled-back", true); err == nil {
		t.Fatal("the failing step committed")
	}
	if n := waiting(t, pool); n != 0 {
		t.Fatalf("a rolled-back pipeline transaction left %d intents in the queue, want 0", n)
	}
	src := newSource(t, q)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if d, err := src.Receive(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive after a rolled-back enqueue = %+v, %v; want nothing until the deadline", d, err)
	}
	if err := step("committed", false); err != nil {
		t.Fatal(err)
	}
	_, ids := intents("committed", 3)
	for _, id := range ids {
		d, err := src.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Intent == nil || d.Intent.ID != id {
			t.Fatalf("delivery %+v: want intent %s, in the order enqueued", d, id)
		}
	}
}

// TestAConsumerKilledAfterClaimingHasItsIntentsRedelivered: consumer A (its
// own pool, store and source) claims intents and is killed (its backends
// terminated by the server, its context cancelled) before it acknowledges
// them. Consumer B gets them back when A's lease ends, and each intent runs
// once, whether A died before running it or after its result was recorded.
func TestAConsumerKilledAfterClaimingHasItsIntentsRedelivered(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	for _, tt := range []struct {
		name string
		// stage wraps A's source and sink so that A stops at the point to
		// kill it; reached is closed there.
		stage func(src effector.Source, sink effector.Sink, reached chan struct{}) (effector.Source, effector.Sink)
	}{
		{"killed after claiming, before the tool ran", func(src effector.Source, sink effector.Sink, reached chan struct{}) (effector.Source, effector.Sink) {
			return &stuckSource{Source: src, reached: reached}, sink
		}},
		{"killed after the result was recorded, before it was published", func(src effector.Source, sink effector.Sink, reached chan struct{}) (effector.Source, effector.Sink) {
			return src, &stuckSink{reached: reached}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			pool, url, q := setup(t, srv)
			ins, ids := intents("killed", 5)
			enqueue(t, pool, ins...)
			table, calls := effectortest.Table(t)

			app := "consumer_a_" + strings.ReplaceAll(strings.Fields(tt.name)[3], ",", "")
			poolA := newPool(t, url, app)
			eA, err := effector.New(table, openStore(t, poolA), effector.WithLogger(quiet))
			if err != nil {
				t.Fatal(err)
			}
			qA := openQueue(t, poolA)
			reached := make(chan struct{})
			srcA, sinkA := tt.stage(newSource(t, qA, pgqueue.WithLease(time.Second), pgqueue.WithBatch(5)), qA.Sink(), reached)
			ctxA, cancelA := context.WithCancel(ctx)
			doneA := make(chan error, 1)
			go func() {
				doneA <- effector.Serve(ctxA, srcA, sinkA, eA, effector.WithServeLogger(quiet), effector.WithDrainTimeout(50*time.Millisecond))
			}()
			select {
			case <-reached:
			case <-time.After(20 * time.Second):
				t.Fatal("consumer A never got to the point of its death")
			}
			var killed int
			if err := pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&killed); err != nil || killed == 0 {
				t.Fatalf("terminating consumer A's backends: %d, %v", killed, err)
			}
			cancelA()
			<-doneA
			if n := waiting(t, pool); n != len(ids) {
				t.Fatalf("after A died, %d intents are in the queue, want all %d: one was acknowledged without a published result", n, len(ids))
			}

			eB, err := effector.New(table, openStore(t, pool), effector.WithLogger(quiet))
			if err != nil {
				t.Fatal(err)
			}
			srcB := &recordingSource{Source: newSource(t, q)}
			if err := serveUntil(t, srcB, q.Sink(), eB, func() bool { return waiting(t, pool) == 0 }); err != nil {
				t.Fatalf("Serve B: %v", err)
			}
			for _, id := range ids {
				if r := resultOf(t, q, id); r.Status != intent.StatusOK || calls.Of(id) != 1 {
					t.Errorf("intent %s: %v %q after %d executions; want OK after 1", id, r.Status, r.ErrorMessage, calls.Of(id))
				}
			}
			if d := srcB.deliveries(); len(d) != len(ids) || d[0] != 2 {
				t.Errorf("B's delivery counts = %v, want %d deliveries, the first (A's stuck one) its second", d, len(ids))
			}
		})
	}
}

// stuckSource hands out nothing: it claims a batch, then hangs until killed.
type stuckSource struct {
	effector.Source
	reached chan struct{}
}

func (s *stuckSource) Receive(ctx context.Context) (effector.Delivery, error) {
	if _, err := s.Source.Receive(ctx); err != nil {
		return effector.Delivery{}, err
	}
	close(s.reached)
	<-ctx.Done()
	return effector.Delivery{}, ctx.Err()
}

// stuckSink hangs on the first result until killed.
type stuckSink struct {
	reached chan struct{}
	once    sync.Once
}

func (s *stuckSink) Publish(ctx context.Context, res intent.Result) error {
	s.once.Do(func() { close(s.reached) })
	<-ctx.Done()
	return ctx.Err()
}

// recordingSource records the delivery counts it hands out.
type recordingSource struct {
	effector.Source
	mu sync.Mutex
	n  []int
}

func (s *recordingSource) Receive(ctx context.Context) (effector.Delivery, error) {
	d, err := s.Source.Receive(ctx)
	if err == nil {
		s.mu.Lock()
		s.n = append(s.n, d.Deliveries)
		s.mu.Unlock()
	}
	return d, err
}

func (s *recordingSource) deliveries() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.n...)
}

// TestAPoisonIntentIsDeadLetteredPastTheAttemptLimitAndTheQueueFlows: an
// intent whose delivery kills its consumer every time (claimed, never
// acknowledged, its lease lapsing) is delivered with a rising count; past
// WithMaxAttempts the effector gives it up with an ERROR result and the
// queue's dead-letter table keeps it, while the intents behind it run.
func TestAPoisonIntentIsDeadLetteredPastTheAttemptLimitAndTheQueueFlows(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool, _, q := setup(t, pgtest.Start(t))
	ins, ids := intents("poison", 6)
	poison := ids[0]
	enqueue(t, pool, ins...)
	for want := 1; want <= 4; want++ {
		src := newSource(t, q, pgqueue.WithBatch(1), pgqueue.WithLease(100*time.Millisecond))
		d, err := src.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Intent == nil || d.Intent.ID != poison || d.Deliveries != want {
			t.Fatalf("crashing delivery %d: %s, Deliveries %d; want %s delivered %d times", want, d.Pos, d.Deliveries, poison, want)
		}
		time.Sleep(150 * time.Millisecond) // the consumer died; its lease lapses
	}
	e, calls := effectortest.Effector(t, openStore(t, pool), effector.WithMaxAttempts(4), effector.WithDeadLetter(q.DeadLetter))
	err := serveUntil(t, newSource(t, q), q.Sink(), e, func() bool {
		return results(t, pool) == len(ids) && waiting(t, pool) == 0
	})
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	for _, id := range ids {
		r := resultOf(t, q, id)
		switch {
		case id == poison && (r.Status != intent.StatusError || !strings.Contains(r.ErrorMessage, "5 attempts")):
			t.Errorf("the poison intent's result = %v %q, want ERROR after 5 attempts", r.Status, r.ErrorMessage)
		case id != poison && r.Status != intent.StatusOK:
			t.Errorf("intent %s = %v, want OK: the rest of the queue keeps flowing", id, r.Status)
		}
	}
	if calls.Of(poison) != 0 || calls.Total() != len(ids)-1 {
		t.Errorf("executions: poison %d, all %d; want 0 and %d", calls.Of(poison), calls.Total(), len(ids)-1)
	}
	dead, err := q.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].IntentID != poison || dead[0].Deliveries != 5 || !strings.Contains(dead[0].Reason, "WithMaxAttempts") {
		t.Fatalf("dead letters = %+v, want the poison intent, 5 deliveries, with its reason", dead)
	}
	var back intent.Intent
	if err := back.UnmarshalBinary(dead[0].Bytes); err != nil || back.ID != poison {
		t.Fatalf("the dead letter's bytes decode to %q, %v; want the poison intent", back.ID, err)
	}
}

// TestRowsThatAreNoIntentGoToTheDeadLetters: torn, garbage and empty bytes
// are moved, as they were, to the dead-letter table with a reason that names
// the row, and the intents around them run.
func TestRowsThatAreNoIntentGoToTheDeadLetters(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool, _, q := setup(t, pgtest.Start(t))
	good, ids := intents("garbage", 2)
	whole, err := good[1].AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][]byte{
		"torn":    whole[:len(whole)-3], // cut inside its last field
		"garbage": {0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x42},
		"empty":   {},
	}
	enqueue(t, pool, good[0])
	for _, name := range []string{"torn", "garbage", "empty"} {
		if _, err := pool.Exec(ctx, `INSERT INTO toolreg_queue_intents (queue, intent) VALUES ($1, $2)`, queueName, bad[name]); err != nil {
			t.Fatal(err)
		}
	}
	enqueue(t, pool, good[1])
	e, calls := effectortest.Effector(t, openStore(t, pool))
	var entries []string
	var mu sync.Mutex
	err = serveUntil(t, newSource(t, q), q.Sink(), e, func() bool {
		return results(t, pool) == len(ids) && waiting(t, pool) == 0
	}, effector.WithEntryDeadLetter(func(ctx context.Context, d effector.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		entries = append(entries, d.Pos)
		return nil
	}))
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if calls.Total() != 2 {
		t.Errorf("executions: %d, want the 2 good intents", calls.Total())
	}
	dead, err := q.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 3 || len(entries) != 3 {
		t.Fatalf("dead letters %+v, entries handed to Serve's sink %v; want 3 of each", dead, entries)
	}
	// Serve's workers dead-letter them in any order: find each by its bytes.
	byBytes := map[string]pgqueue.DeadLetter{}
	for _, d := range dead {
		byBytes[string(d.Bytes)] = d
	}
	for _, name := range []string{"torn", "garbage", "empty"} {
		d, ok := byBytes[string(bad[name])]
		if !ok || d.IntentID != "" || d.Deliveries != 1 ||
			!strings.Contains(d.Reason, "pgqueue: row "+queueName+"/") || !strings.Contains(d.Reason, "is no intent") {
			t.Errorf("the %s row's dead letter = %+v: want its bytes as they were, 1 delivery, and a reason naming the row", name, d)
		}
	}
	if r := byBytes[""].Reason; !strings.Contains(r, "no intent_id") {
		t.Errorf("the empty row's reason = %q, want it to say it has no intent_id", r)
	}
	if r := byBytes[string(bad["torn"])].Reason; !strings.Contains(r, "unexpected EOF") {
		t.Errorf("the torn row's reason = %q, want it to say where the bytes end", r)
	}
}

// TestTwoServeLoopsOnOneQueue runs two Serve loops, each with its own pool,
// store and source, on one queue of 1,000 rows holding 700 intents and
// duplicates of 300 of them: every intent has exactly one result, the tool
// ran once per intent id, and the queue is empty.
func TestTwoServeLoopsOnOneQueue(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool, url, _ := setup(t, pgtest.Start(t))
	const entries, unique = 1000, 700
	ins, ids := intents("contention", unique)
	all := make([]*intent.Intent, entries)
	for i := range all {
		all[i] = ins[(i*7919)%unique] // every id, then repeats
	}
	for i := 0; i < entries; i += 100 {
		enqueue(t, pool, all[i:i+100]...)
	}
	table, calls := effectortest.Table(t)
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	var srcs [2]*recordingSource
	for i := range 2 {
		p := newPool(t, url, "serve")
		e, err := effector.New(table, openStore(t, p), effector.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		q := openQueue(t, p)
		src := &recordingSource{Source: newSource(t, q)}
		srcs[i] = src
		go func() {
			errs <- effector.Serve(stop, src, q.Sink(), e, effector.WithWorkers(4), effector.WithServeLogger(quiet))
		}()
	}
	deadline := time.Now().Add(90 * time.Second)
	for waiting(t, pool) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after 90s: %d rows waiting, %d results", waiting(t, pool), results(t, pool))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
	q := openQueue(t, pool)
	for _, id := range ids {
		if r := resultOf(t, q, id); r.Status != intent.StatusOK || calls.Of(id) != 1 {
			t.Errorf("intent %s: %v after %d executions; want OK after 1", id, r.Status, calls.Of(id))
		}
	}
	if n := results(t, pool); n != unique {
		t.Errorf("results: %d rows, want one per intent, %d", n, unique)
	}
	if calls.Total() != unique {
		t.Errorf("executions: %d, want %d", calls.Total(), unique)
	}
	if n := count(t, pool, `SELECT count(*) FROM toolreg_queue_dead`); n != 0 {
		t.Errorf("dead letters: %d, want 0", n)
	}
	// The store would hide two consumers claiming one row: count the
	// deliveries themselves. Each row went to one consumer, once.
	var delivered int
	for i, src := range srcs {
		d := src.deliveries()
		delivered += len(d)
		for _, n := range d {
			if n != 1 {
				t.Errorf("consumer %d was handed a row delivered %d times, want every row delivered once", i, n)
				break
			}
		}
	}
	if delivered != entries {
		t.Errorf("deliveries: %d, want one per row, %d", delivered, entries)
	}
}

// TestAnAcknowledgementAfterTheLeaseWasTakenOverDeletesNothing: the token
// fences a consumer whose lease lapsed: its late acknowledgement leaves the
// row to the consumer that holds it now.
func TestAnAcknowledgementAfterTheLeaseWasTakenOverDeletesNothing(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool, _, q := setup(t, pgtest.Start(t))
	enqueue(t, pool, effectortest.Intent("fence", 1, 0))
	slow := newSource(t, q, pgqueue.WithLease(100*time.Millisecond))
	d1, err := slow.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	d2, err := newSource(t, q).Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d2.Pos != d1.Pos || d2.Deliveries != 2 {
		t.Fatalf("second delivery %s (%d), want %s delivered twice", d2.Pos, d2.Deliveries, d1.Pos)
	}
	if err := d1.Ack(ctx); err != nil {
		t.Fatalf("the late acknowledgement: %v, want nil (nothing to do)", err)
	}
	if n := waiting(t, pool); n != 1 {
		t.Fatalf("after the lapsed owner's ack, %d rows, want the row still held by its new owner", n)
	}
	if err := d2.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if n := waiting(t, pool); n != 0 {
		t.Fatalf("after the owner's ack, %d rows, want 0", n)
	}
}

// TestCloseGivesBackWhatWasClaimedAndNotHandedOut: a batch's unhanded rows
// are visible again at once, their delivery uncounted.
func TestCloseGivesBackWhatWasClaimedAndNotHandedOut(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool, _, q := setup(t, pgtest.Start(t))
	ins, ids := intents("close", 4)
	enqueue(t, pool, ins...)
	first, err := q.NewSource(pgqueue.WithBatch(4), pgqueue.WithLease(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	next := newSource(t, q, pgqueue.WithBatch(4))
	soon, cancel := context.WithTimeout(ctx, 5*time.Second) // well inside the hour-long lease
	defer cancel()
	for _, id := range ids[1:] {
		d, err := next.Receive(soon)
		if err != nil {
			t.Fatal(err)
		}
		if d.Intent.ID != id || d.Deliveries != 1 {
			t.Fatalf("after Close: %s delivered %d times, want %s delivered once", d.Intent.ID, d.Deliveries, id)
		}
	}
}

func TestBadConfigurationIsRefusedSayingWhat(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := pgtest.Start(t)
	unmigrated, _ := srv.NewDatabase(t)
	var se *pgstore.SchemaError
	if _, err := pgqueue.Open(ctx, unmigrated, queueName); !errors.As(err, &se) || !strings.Contains(err.Error(), "toolreg migrate") {
		t.Fatalf("Open on an unmigrated database: %v, want a *pgstore.SchemaError saying to run toolreg migrate", err)
	}
	if err := pgqueue.Enqueue(ctx, unmigrated, queueName, effectortest.Intent("x", 1, 0)); err == nil || !strings.Contains(err.Error(), "run pgstore.Migrate") {
		t.Fatalf("Enqueue on an unmigrated database: %v, want it to say to migrate", err)
	}
	if _, err := pgqueue.Open(ctx, nil, queueName); err == nil || !strings.Contains(err.Error(), "nil pool") {
		t.Fatalf("Open(nil): %v", err)
	}
	pool, _, q := setup(t, srv)
	bad := effectortest.Intent("bad", 1, 1)
	bad.ToolName = "\xff"
	for _, ins := range [][]*intent.Intent{{effectortest.Intent("good", 1, 0), bad}, {effectortest.Intent("good", 1, 0), nil}} {
		if err := pgqueue.Enqueue(ctx, pool, queueName, ins...); err == nil {
			t.Fatal("Enqueue of an intent that cannot be encoded succeeded")
		}
	}
	if n := waiting(t, pool); n != 0 {
		t.Fatalf("a refused Enqueue wrote %d intents, want none", n)
	}
	if err := pgqueue.Enqueue(ctx, pool, "", effectortest.Intent("x", 1, 0)); err == nil || !strings.Contains(err.Error(), `queue name ""`) {
		t.Fatalf("Enqueue on an unnamed queue: %v", err)
	}
	if _, err := pgqueue.Open(ctx, pool, ""); err == nil || !strings.Contains(err.Error(), `queue name ""`) {
		t.Fatalf("Open with no name: %v", err)
	}
	for _, tt := range []struct {
		opt  pgqueue.Option
		want string
	}{
		{pgqueue.WithLease(0), "WithLease(0s)"},
		{pgqueue.WithPollInterval(-time.Second), "WithPollInterval(-1s)"},
		{pgqueue.WithBatch(0), "WithBatch(0)"},
		{pgqueue.WithLogger(nil), "WithLogger(nil)"},
	} {
		if _, err := q.NewSource(tt.opt); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewSource: %v, want an error naming %q", err, tt.want)
		}
	}
}

// TestAVersionOneDatabaseIsRefusedUntilMigrated: a database the store made
// before the queue existed (schema version 1) is refused by Open, and one
// Migrate adds the queue's tables.
func TestAVersionOneDatabaseIsRefusedUntilMigrated(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool, _, _ := setup(t, pgtest.Start(t))
	if _, err := pool.Exec(ctx, `DROP TABLE toolreg_queue_intents, toolreg_queue_results, toolreg_queue_dead, toolreg_effector_budget;
		DROP SEQUENCE toolreg_queue_fence; DELETE FROM toolreg_effector_schema WHERE version >= 2`); err != nil {
		t.Fatal(err)
	}
	var se *pgstore.SchemaError
	if _, err := pgqueue.Open(ctx, pool, queueName); !errors.As(err, &se) || se.Have != 1 {
		t.Fatalf("Open on a version 1 database: %v, want a *pgstore.SchemaError with Have 1", err)
	}
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	q := openQueue(t, pool)
	enqueue(t, pool, effectortest.Intent("upgraded", 1, 0))
	if d, err := newSource(t, q).Receive(ctx); err != nil || d.Intent == nil {
		t.Fatalf("Receive after the upgrade: %+v, %v", d, err)
	}
}

// testContext ends after a minute, so a receive that waits for what never
// comes fails the test rather than hanging it.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestClaimedRowsWorkersWereSlowToTakeAreClaimedAfresh: rows a batch claimed
// and that waited half their lease in the source are given back and claimed
// again before they are handed out, so their lease does not run out under
// the worker that takes them and another consumer is not handed them too.
func TestClaimedRowsWorkersWereSlowToTakeAreClaimedAfresh(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool, _, q := setup(t, pgtest.Start(t))
	ins, ids := intents("stale", 4)
	enqueue(t, pool, ins...)
	const lease = 2 * time.Second
	a := newSource(t, q, pgqueue.WithBatch(4), pgqueue.WithLease(lease))
	d, err := a.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(lease * 6 / 10)
	d, err = a.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Intent.ID != ids[1] || d.Deliveries != 1 {
		t.Fatalf("after the wait: %s delivered %d times, want %s delivered once", d.Intent.ID, d.Deliveries, ids[1])
	}
	time.Sleep(lease * 6 / 10) // past the first claim's lease, inside the fresh one
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if d, err := newSource(t, q).Receive(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("another consumer got %s (delivered %d times): the rows were not claimed afresh", d.Pos, d.Deliveries)
	}
}

// TestServeRidesOutItsConnectionsBeingKilled: the server terminates every
// connection of the consumer again and again while it serves (the listener's
// too); the source retries its claims rather than stopping Serve, and every
// intent is answered, once.
//
// A round of kills waits for the tool to have run since the round before, not
// for a clock: the kills land at every stage of the pipeline (claims, the
// dedup store's claims and completions, results, acknowledgements, the
// listener) however fast or slow the machine, and never so often that nothing
// can get through. Timed rounds (every 50ms) starved a loaded machine: no
// connection lived long enough for a completion, so results went unrecorded
// for a whole lease and their intents ran again as reclaimed, as the effector
// documents, and the test failed on the timing alone. The lease is generous
// for the same reason: an intent runs twice only if its result cannot be
// recorded for 30s, which the kills alone cannot cause.
func TestServeRidesOutItsConnectionsBeingKilled(t *testing.T) {
	t.Parallel()
	pool, url, _ := setup(t, pgtest.Start(t))
	ins, ids := intents("terminated", 200)
	enqueue(t, pool, ins...)
	const app = "terminated_consumer"
	p := newPool(t, url, app)
	q := openQueue(t, p)
	ran := make(chan struct{}, 1)
	signal := func(context.Context) error {
		select {
		case ran <- struct{}{}:
		default:
		}
		return nil
	}
	e, calls := effectortest.EffectorWithHooks(t, openStore(t, p), []func(context.Context) error{signal},
		effector.WithTimeout(time.Second), effector.WithLease(30*time.Second))
	killing, stopKilling := context.WithCancel(context.Background())
	defer stopKilling()
	var killed, rounds int
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			var n int
			err := pool.QueryRow(killing, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n)
			if killing.Err() != nil {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			killed += n
			rounds++
			select { // the next round once the tool ran again
			case <-killing.Done():
				return
			case <-ran:
			}
		}
	})
	err := serveUntil(t, newSource(t, q, pgqueue.WithBatch(2)), q.Sink(), e, func() bool {
		if waiting(t, pool) <= 150 {
			stopKilling() // the rest with no connection killed, so the run ends
		}
		return waiting(t, pool) == 0
	})
	stopKilling()
	wg.Wait()
	if err != nil {
		t.Fatalf("Serve stopped with %v, want it to ride out lost connections", err)
	}
	if killed == 0 {
		t.Fatal("no connection of the consumer was terminated")
	}
	t.Logf("%d backends terminated in %d rounds", killed, rounds)
	for _, id := range ids {
		if r := resultOf(t, q, id); r.Status != intent.StatusOK || calls.Of(id) != 1 {
			t.Errorf("intent %s: %v %q after %d executions; want OK after 1", id, r.Status, r.ErrorMessage, calls.Of(id))
		}
	}
}

// TestPurgeResultsDeletesOnlyTheQueuesOldResults: only results published
// before the cutoff, of this queue, go, however many batches they take.
func TestPurgeResultsDeletesOnlyTheQueuesOldResults(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pool, _, q := setup(t, pgtest.Start(t))
	other, err := pgqueue.Open(ctx, pool, "other")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*pgqueue.Sink{q.Sink(), other.Sink()} {
		for _, id := range []string{"old", "new"} {
			if err := s.Publish(ctx, intent.Result{IntentID: id, Status: intent.StatusOK}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE toolreg_queue_results SET published_at = published_at - interval '2 hours' WHERE intent_id = 'old'`); err != nil {
		t.Fatal(err)
	}
	// 2,500 more old ones: three batches.
	if _, err := pool.Exec(ctx, `INSERT INTO toolreg_queue_results (queue, intent_id, status, result, published_at)
		SELECT $1, convert_to('bulk-' || i, 'UTF8'), 1, '', clock_timestamp() - interval '2 hours' FROM generate_series(1, 2500) i`, queueName); err != nil {
		t.Fatal(err)
	}
	n, err := q.PurgeResults(ctx, time.Hour)
	if err != nil || n != 2501 {
		t.Fatalf("PurgeResults(1h) = %d, %v; want 2501 deleted", n, err)
	}
	for _, tt := range []struct {
		q    *pgqueue.Queue
		id   string
		want bool
	}{{q, "old", false}, {q, "new", true}, {other, "old", true}, {other, "new", true}} {
		if _, ok, err := tt.q.Result(ctx, tt.id); err != nil || ok != tt.want {
			t.Errorf("queue %s, result %q: present %v (%v), want %v", tt.q.Name(), tt.id, ok, err, tt.want)
		}
	}
	if _, err := q.PurgeResults(ctx, -time.Second); err == nil {
		t.Error("PurgeResults(-1s) succeeded, want it refused")
	}
}

// TestReceiveBatchHandsOverWhatOneClaimTook: with 10 intents queued and
// claims of 8, ReceiveBatch hands over at most max of the 8 one claim took,
// then the rest of them, then what the next claim takes: every intent once,
// each acknowledged on its own.
func TestReceiveBatchHandsOverWhatOneClaimTook(t *testing.T) {
	t.Parallel()
	pool, _, q := setup(t, pgtest.Start(t))
	ins, ids := intents("batch", 10)
	enqueue(t, pool, ins...)
	src := newSource(t, q, pgqueue.WithBatch(8))
	ctx := context.Background()
	var sizes []int
	seen := map[string]int{}
	for len(seen) < len(ids) {
		ds, err := src.ReceiveBatch(ctx, 5, nil)
		if err != nil {
			t.Fatalf("ReceiveBatch: %v", err)
		}
		sizes = append(sizes, len(ds))
		for _, d := range ds {
			seen[d.Intent.ID]++
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if want := []int{5, 3, 2}; !slices.Equal(sizes, want) {
		t.Errorf("ReceiveBatch(max 5) handed over batches of %v, want %v: the claim's 8 in two, then the 2 the next claim took", sizes, want)
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("intent %s handed over %d times, want once", id, seen[id])
		}
	}
	if n := waiting(t, pool); n != 0 {
		t.Errorf("%d intents still queued after every delivery was acknowledged", n)
	}
}
