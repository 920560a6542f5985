package redisstream_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/redisstore"
	"github.com/beam-agents/toolreg/effector/redisstream"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/redistest"
)

const (
	intents = "intents"
	results = "results"
	group   = "effectors"
)

// addIntents adds n intents of entity to the intents stream and returns their ids.
func addIntents(t *testing.T, rdb *redis.Client, entity string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		in := effectortest.Intent(entity, 1, uint32(i))
		if _, err := redisstream.Add(context.Background(), rdb, intents, in); err != nil {
			t.Fatal(err)
		}
		ids[i] = in.ID
	}
	return ids
}

func newSource(t *testing.T, rdb *redis.Client, consumer string, opts ...redisstream.Option) *redisstream.Source {
	t.Helper()
	opts = append([]redisstream.Option{redisstream.WithBlock(50 * time.Millisecond)}, opts...)
	s, err := redisstream.NewSource(context.Background(), rdb, intents, group, consumer, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pending(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	p, err := rdb.XPending(context.Background(), intents, group).Result()
	if err != nil {
		t.Fatal(err)
	}
	return p.Count
}

// publishedIDs reads the results stream: how many results each intent id has.
func publishedIDs(t *testing.T, rdb *redis.Client) map[string]int {
	t.Helper()
	rs, err := redisstream.Results(context.Background(), rdb, results)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, r := range rs {
		got[r.IntentID]++
	}
	return got
}

// serveUntil runs Serve in the background until cond holds (or 20s pass,
// failing the test), then stops it and returns its error.
func serveUntil(t *testing.T, src effector.Source, sink effector.Sink, p effector.Processor, cond func() bool) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- effector.Serve(ctx, src, sink, p, effector.WithWorkers(4), effector.WithServeLogger(slog.New(slog.DiscardHandler)),
			effector.WithRetryBackoff(5*time.Millisecond, 50*time.Millisecond))
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatal("Serve did not get there within 20s")
		}
		time.Sleep(10 * time.Millisecond)
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

func TestServeOverStreams(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)

	t.Run("every intent gets one result and is acknowledged", func(t *testing.T) {
		rdb := srv.Client(t)
		rdb.FlushAll(context.Background())
		ids := addIntents(t, rdb, "serve", 40)
		e, calls := effectortest.Effector(t, effector.NewMemoryStore())
		src := newSource(t, rdb, "c1")
		err := serveUntil(t, src, redisstream.NewSink(rdb, results), e, func() bool {
			return len(publishedIDs(t, rdb)) == len(ids) && pending(t, rdb) == 0
		})
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		got := publishedIDs(t, rdb)
		for _, id := range ids {
			if got[id] != 1 || calls.Of(id) != 1 {
				t.Errorf("intent %s: %d results, %d executions; want 1 and 1", id, got[id], calls.Of(id))
			}
		}
	})

	t.Run("entries a dead consumer left pending are reclaimed after the idle time", func(t *testing.T) {
		rdb := srv.Client(t)
		rdb.FlushAll(context.Background())
		ids := addIntents(t, rdb, "reclaim", 10)
		// The dead consumer read half of them and never acknowledged them.
		dead := newSource(t, rdb, "dead", redisstream.WithBatch(5))
		for range 5 {
			if _, err := dead.Receive(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if n := pending(t, rdb); n != 5 {
			t.Fatalf("pending after the dead consumer's reads: %d, want 5", n)
		}
		e, calls := effectortest.Effector(t, effector.NewMemoryStore())
		alive := newSource(t, rdb, "alive", redisstream.WithReclaimIdle(200*time.Millisecond))
		err := serveUntil(t, alive, redisstream.NewSink(rdb, results), e, func() bool {
			return len(publishedIDs(t, rdb)) == len(ids) && pending(t, rdb) == 0
		})
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		for _, id := range ids {
			if calls.Of(id) != 1 {
				t.Errorf("intent %s executed %d times, want 1", id, calls.Of(id))
			}
		}
	})

	t.Run("an intent whose result cannot be published stays pending", func(t *testing.T) {
		rdb := srv.Client(t)
		rdb.FlushAll(context.Background())
		addIntents(t, rdb, "unpublished", 1)
		e, calls := effectortest.Effector(t, effector.NewMemoryStore())
		sink := &failingSink{}
		err := serveUntil(t, newSource(t, rdb, "c1"), sink, e, func() bool { return sink.attempts() >= 3 })
		var ue *effector.UnansweredError
		if !errors.As(err, &ue) || ue.Unanswered != 1 {
			t.Fatalf("Serve returned %v, want an UnansweredError with 1 unanswered", err)
		}
		if n := pending(t, rdb); n != 1 {
			t.Fatalf("pending: %d, want 1: an intent was acknowledged without a published result", n)
		}
		// A restart with the same consumer name takes it back at once and,
		// the store answering, publishes the recorded result without
		// executing again.
		err = serveUntil(t, newSource(t, rdb, "c1"), redisstream.NewSink(rdb, results), e, func() bool {
			return len(publishedIDs(t, rdb)) == 1 && pending(t, rdb) == 0
		})
		if err != nil {
			t.Fatalf("Serve after restart: %v", err)
		}
		if calls.Total() != 1 {
			t.Fatalf("executions: %d, want 1", calls.Total())
		}
	})
}

type failingSink struct {
	mu sync.Mutex
	n  int
}

func (s *failingSink) Publish(ctx context.Context, res intent.Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return errors.New("results stream unavailable")
}

func (s *failingSink) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func TestSourceRedeliversOwnPendingFirst(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	ids := addIntents(t, rdb, "own", 6)

	first := newSource(t, rdb, "c1", redisstream.WithBatch(3))
	var firstPos []string
	for range 3 {
		d, err := first.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		firstPos = append(firstPos, d.Pos)
	}
	// The restarted consumer, with a reclaim idle time far away, gets its own
	// unacknowledged entries back first, in order, then the rest.
	again := newSource(t, rdb, "c1", redisstream.WithReclaimIdle(time.Hour))
	var gotPos, gotIDs []string
	for range 6 {
		d, err := again.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		gotPos = append(gotPos, d.Pos)
		gotIDs = append(gotIDs, d.Intent.ID)
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(firstPos, gotPos[:3]); diff != "" {
		t.Errorf("first deliveries after restart (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ids, gotIDs); diff != "" {
		t.Errorf("intents delivered (-want +got):\n%s", diff)
	}
	if n := pending(t, rdb); n != 0 {
		t.Errorf("pending after acknowledging all: %d", n)
	}
	// Nothing is left: a receive waits out its context.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if d, err := again.Receive(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive on an empty stream: %+v, %v; want the context's deadline", d, err)
	}
}

func TestSourceReportsEntriesThatAreNoIntent(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	for _, values := range [][]any{{"other", "x"}, {redisstream.IntentField, "{not json"}} {
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: intents, Values: values}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	src := newSource(t, rdb, "c1")
	for _, want := range []string{`has no field "intent"`, `field "intent"`} {
		d, err := src.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Intent != nil || d.Err == nil || !strings.Contains(d.Err.Error(), want) || !strings.Contains(d.Err.Error(), d.Pos) {
			t.Fatalf("delivery %+v: want no intent and an error naming %q and its position", d, want)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := pending(t, rdb); n != 0 {
		t.Fatalf("pending: %d, want 0", n)
	}
}

func TestNewSourceRefusesBadConfiguration(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialed
	defer rdb.Close()
	tests := []struct {
		name     string
		consumer string
		opts     []redisstream.Option
		want     string
	}{
		{"an unnamed consumer is refused", "", nil, `consumer ""`},
		{"a zero reclaim idle time is refused", "c", []redisstream.Option{redisstream.WithReclaimIdle(0)}, "WithReclaimIdle(0s)"},
		{"a zero block time is refused", "c", []redisstream.Option{redisstream.WithBlock(0)}, "WithBlock(0s)"},
		{"a zero batch is refused", "c", []redisstream.Option{redisstream.WithBatch(0)}, "WithBatch(0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := redisstream.NewSource(context.Background(), rdb, intents, group, tt.consumer, tt.opts...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewSource: %v, want an error naming %q", err, tt.want)
			}
		})
	}
}

// TestContentionOverStreams runs four Serve loops, each its own consumer with
// its own connection, on one intents stream of 1,000 entries with
// redeliveries and one Redis dedup store: each intent executes once, every
// entry is acknowledged, and every intent has a result.
func TestContentionOverStreams(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	rdb := srv.Client(t)
	const entries, unique = 1000, 700
	ins := make([]*intent.Intent, unique)
	for i := range ins {
		ins[i] = effectortest.Intent("contention", 1, uint32(i))
	}
	pipe := rdb.Pipeline()
	for i := range entries {
		b, err := ins[(i*7919)%unique].MarshalJSON() // every id, then repeats
		if err != nil {
			t.Fatal(err)
		}
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: intents, Values: []any{redisstream.IntentField, string(b)}})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	table, calls := effectortest.Table(t)
	errs := make(chan error, 4)
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := range 4 {
		c := srv.Client(t)
		e, err := effector.New(table, redisstore.New(c), effector.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		src := newSource(t, c, fmt.Sprintf("c%d", i))
		go func() {
			errs <- effector.Serve(stop, src, redisstream.NewSink(c, results), e, effector.WithWorkers(4),
				effector.WithServeLogger(slog.New(slog.DiscardHandler)))
		}()
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := rdb.XLen(ctx, results).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == entries && pending(t, rdb) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s: %d of %d results, %d pending", n, entries, pending(t, rdb))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
	got := publishedIDs(t, rdb)
	for _, in := range ins {
		if calls.Of(in.ID) != 1 || got[in.ID] == 0 {
			t.Errorf("intent %s: %d executions, %d results; want 1 execution and a result", in.ID, calls.Of(in.ID), got[in.ID])
		}
	}
	if calls.Total() != unique {
		t.Errorf("executions: %d, want %d", calls.Total(), unique)
	}
}

func TestAPoisonEntryRedeliveredPastMaxAttemptsIsGivenUpAndTheStreamFlows(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	ids := addIntents(t, rdb, "poison", 6)
	poison := ids[0]
	// A consumer that dies on the first entry each time it reads it: its
	// own pending entry is delivered again on every restart.
	for want := 1; want <= 4; want++ {
		d, err := newSource(t, rdb, "c1", redisstream.WithBatch(1), redisstream.WithReclaimIdle(time.Hour)).Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Intent.ID != poison || d.Deliveries != want {
			t.Fatalf("delivery %d: intent %s, Deliveries %d; want %s delivered %d times", want, d.Intent.ID, d.Deliveries, poison, want)
		}
	}
	var mu sync.Mutex
	var dead []string
	e, calls := effectortest.Effector(t, effector.NewMemoryStore(), effector.WithMaxAttempts(4),
		effector.WithDeadLetter(func(ctx context.Context, in *intent.Intent, reason error) error {
			mu.Lock()
			defer mu.Unlock()
			dead = append(dead, in.ID+": "+reason.Error())
			return nil
		}))
	src := newSource(t, rdb, "c1", redisstream.WithReclaimIdle(time.Hour))
	err := serveUntil(t, src, redisstream.NewSink(rdb, results), e, func() bool {
		return len(publishedIDs(t, rdb)) == len(ids) && pending(t, rdb) == 0
	})
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	rs, err := redisstream.Results(ctx, rdb, results)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		switch {
		case r.IntentID == poison && (r.Status != intent.StatusError || !strings.Contains(r.ErrorMessage, "5 attempts")):
			t.Errorf("the poison intent's result = %v %q, want ERROR after 5 attempts", r.Status, r.ErrorMessage)
		case r.IntentID != poison && r.Status != intent.StatusOK:
			t.Errorf("intent %s = %v, want OK: the rest of the stream keeps flowing", r.IntentID, r.Status)
		}
	}
	if calls.Of(poison) != 0 || calls.Total() != len(ids)-1 {
		t.Errorf("executions: poison %d, all %d; want 0 and %d", calls.Of(poison), calls.Total(), len(ids)-1)
	}
	if len(dead) != 1 || !strings.HasPrefix(dead[0], poison) || !strings.Contains(dead[0], "WithMaxAttempts") {
		t.Errorf("dead letters = %q, want the poison intent with its reason", dead)
	}
}

// TestReceiveBatchHandsOverWhatOneReadFetched: with 10 entries in the stream
// and reads of 8, ReceiveBatch with max 3 hands over 3 of the 8 the first
// read fetched; with max 20, the 5 left of them and no more (it does not
// read again while it holds some); then the 2 the next read fetched. Each
// delivery carries its intent, in stream order, and is acknowledged on its
// own.
func TestReceiveBatchHandsOverWhatOneReadFetched(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ids := addIntents(t, rdb, "batch", 10)
	src := newSource(t, rdb, "c1", redisstream.WithBatch(8))
	ctx := context.Background()
	first, err := src.ReceiveBatch(ctx, 3, nil)
	if err != nil || len(first) != 3 {
		t.Fatalf("ReceiveBatch(max 3) = %d deliveries, %v; want 3", len(first), err)
	}
	rest, err := src.ReceiveBatch(ctx, 20, nil)
	if err != nil || len(rest) != 5 {
		t.Fatalf("ReceiveBatch(max 20) = %d deliveries, %v; want the 5 left of the read of 8", len(rest), err)
	}
	last, err := src.ReceiveBatch(ctx, 20, nil)
	if err != nil || len(last) != 2 {
		t.Fatalf("ReceiveBatch(max 20) = %d deliveries, %v; want the 2 the next read fetched", len(last), err)
	}
	all := append(append(first, rest...), last...)
	for i, d := range all {
		if d.Intent == nil || d.Intent.ID != ids[i] {
			t.Fatalf("delivery %d is %v, want intent %s in stream order", i, d.Intent, ids[i])
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := pending(t, rdb); n != 0 {
		t.Errorf("%d entries pending after every delivery was acknowledged", n)
	}
}
