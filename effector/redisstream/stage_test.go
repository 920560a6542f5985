package redisstream_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/redisstream"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// xaddTrips counts the round trips to Redis that carry an XADD: a pipeline
// counts once, however many commands it holds.
type xaddTrips struct{ n atomic.Int64 }

func (h *xaddTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *xaddTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "xadd" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *xaddTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "xadd" {
				h.n.Add(1)
				break
			}
		}
		return next(ctx, cmds)
	}
}

// countedClient is a client of addr whose XADD round trips trips counts,
// which does not retry a failed command itself (so that a cut connection
// reaches the sink), closed when the test ends.
func countedClient(t *testing.T, addr string) (*redis.Client, *xaddTrips) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	h := &xaddTrips{}
	c.AddHook(h)
	t.Cleanup(func() { c.Close() })
	return c, h
}

func result(id string) intent.Result {
	return intent.Result{IntentID: id, Status: intent.StatusOK, Payload: []byte(`{"n":1}`)}
}

// stageAll stages a result for each id and returns their waits.
func stageAll(t *testing.T, sink *redisstream.Sink, ids []string) []func() error {
	t.Helper()
	waits := make([]func() error, len(ids))
	for i, id := range ids {
		w, err := sink.Stage(context.Background(), result(id))
		if err != nil {
			t.Fatalf("Stage %s: %v", id, err)
		}
		waits[i] = w
	}
	return waits
}

func resultIDs(t *testing.T, rdb *redis.Client) []string {
	t.Helper()
	rs, err := redisstream.Results(context.Background(), rdb, results)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.IntentID
	}
	return ids
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// The first wait writes every result staged by then in one pipeline, in
// staged order; the other waits of that pipeline return at once, with no
// round trip of their own.
func TestStagedResultsShareOnePipelineInStagedOrder(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb, trips := countedClient(t, srv.Addr)
	sink := redisstream.NewSink(rdb, results)
	want := ids("order", 50)
	waits := stageAll(t, sink, want)
	if n := trips.n.Load(); n != 0 {
		t.Fatalf("%d round trips before any wait: Stage must only queue", n)
	}
	if err := waits[len(waits)-1](); err != nil { // the last staged waits first
		t.Fatal(err)
	}
	if n := trips.n.Load(); n != 1 {
		t.Fatalf("%d round trips for 50 staged results, want 1", n)
	}
	for i, w := range waits {
		if err := w(); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	if n := trips.n.Load(); n != 1 {
		t.Fatalf("%d round trips after every wait, want still 1: a written result's wait must return at once", n)
	}
	if got := resultIDs(t, rdb); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("results stream %v, want the staged order %v", got, want)
	}
	// Results staged after the write go to the next one, after these.
	more := ids("later", 3)
	for _, w := range stageAll(t, sink, more) {
		if err := w(); err != nil {
			t.Fatal(err)
		}
	}
	if n := trips.n.Load(); n != 2 {
		t.Fatalf("%d round trips, want 2", n)
	}
	if got := resultIDs(t, rdb); strings.Join(got, " ") != strings.Join(append(want, more...), " ") {
		t.Fatalf("results stream %v, want the later ones after the first", got)
	}
}

// A staged write that fails, the connection cut as the pipeline is sent or
// the server down, fails every wait of it, and the results can be
// published again.
func TestAFailedStagedWriteFailsEveryWaitOfIt(t *testing.T) {
	t.Parallel()
	t.Run("the connection is cut as the pipeline is sent", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		proxy := srv.Proxy(t)
		rdb, _ := countedClient(t, proxy.Addr)
		sink := redisstream.NewSink(rdb, results)
		waits := stageAll(t, sink, ids("cut", 20))
		proxy.CutOn("cut-010") // inside the pipeline
		for i, w := range waits {
			if err := w(); err == nil || !strings.Contains(err.Error(), "redisstream: publishing the result of intent") {
				t.Fatalf("wait %d: %v, want the failed XADD's error", i, err)
			}
		}
		if got := resultIDs(t, srv.Client(t)); len(got) != 0 {
			t.Fatalf("results %v, want none: the server never saw the pipeline", got)
		}
	})
	t.Run("the server stops between Stage and wait", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t, redistest.WithDurability())
		rdb, _ := countedClient(t, srv.Addr)
		sink := redisstream.NewSink(rdb, results)
		want := ids("down", 20)
		waits := stageAll(t, sink, want)
		srv.Stop()
		for i, w := range waits {
			if err := w(); err == nil {
				t.Fatalf("wait %d returned nil with the server down", i)
			}
		}
		srv.Restart(t)
		for _, id := range want { // Serve's path after a failed wait
			if err := sink.Publish(context.Background(), result(id)); err != nil {
				t.Fatalf("Publish after the restart: %v", err)
			}
		}
		if got := resultIDs(t, rdb); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("results %v, want %v", got, want)
		}
	})
}

// Stagers on many goroutines share round trips, and each one's results come
// out in the order it staged them, every one once.
func TestManyConcurrentStagers(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb, trips := countedClient(t, srv.Addr)
	sink := redisstream.NewSink(rdb, results)
	const stagers, each = 8, 50
	var wg sync.WaitGroup
	for g := range stagers {
		wg.Go(func() {
			var waits []func() error
			for i := range each {
				w, err := sink.Stage(context.Background(), result(fmt.Sprintf("g%d-%03d", g, i)))
				if err != nil {
					t.Error(err)
					return
				}
				waits = append(waits, w)
				if i%10 == 9 { // wait now and then, the newest first
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
	got := resultIDs(t, rdb)
	if len(got) != stagers*each {
		t.Fatalf("%d results, want %d", len(got), stagers*each)
	}
	next := map[string]int{}
	for _, id := range got {
		g, i, _ := strings.Cut(id, "-")
		n, err := strconv.Atoi(i)
		if err != nil {
			t.Fatalf("result %q: %v", id, err)
		}
		if n != next[g] {
			t.Fatalf("stager %s's result %d came after its %d: out of staged order", g, n, next[g]-1)
		}
		next[g]++
	}
	if n := trips.n.Load(); n > stagers*each/10 {
		t.Fatalf("%d round trips for %d results waited for in groups of 10: stagers do not share them", n, stagers*each)
	}
}

// Stage refuses a context that has ended, and writes nothing; on a closed
// client, Stage queues and the wait fails saying so.
func TestStageAfterCancelOrClose(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	sink := redisstream.NewSink(rdb, results)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if w, err := sink.Stage(ctx, result("cancelled")); !errors.Is(err, context.Canceled) || w != nil {
		t.Fatalf("Stage with a cancelled context: %v, want context.Canceled and no wait", err)
	}
	// A result whose stager gave up between Stage and wait is not written;
	// the others of its write are.
	ending, end := context.WithCancel(context.Background())
	wGone, err := sink.Stage(ending, result("gone"))
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
	if got := resultIDs(t, rdb); strings.Join(got, " ") != "kept" {
		t.Fatalf("results %v, want only kept", got)
	}

	closed := redis.NewClient(&redis.Options{Addr: srv.Addr})
	closed.Close()
	w, err := redisstream.NewSink(closed, results).Stage(context.Background(), result("after-close"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w(); !errors.Is(err, redis.ErrClosed) || !strings.Contains(err.Error(), `intent "after-close"`) {
		t.Fatalf("wait on a closed client: %v, want redis.ErrClosed naming the intent", err)
	}
}

// Serve over N intents writes their results in far fewer round trips than
// N: the sink's Redis is 10ms away, so results staged while one pipeline is
// under way share the next. One XADD per result would take N.
func TestServeWritesResultsInFewerRoundTripsThanIntents(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	proxy := srv.Proxy(t)
	proxy.Delay(10 * time.Millisecond)
	sinkClient, trips := countedClient(t, proxy.Addr)
	const n = 300
	want := addIntents(t, rdb, "trips", n)
	e, _ := effectortest.Effector(t, effector.NewMemoryStore())
	err := serveUntil(t, newSource(t, rdb, "c1", redisstream.WithBatch(100)), redisstream.NewSink(sinkClient, results), e, func() bool {
		return len(publishedIDs(t, rdb)) == n && pending(t, rdb) == 0
	})
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	got := publishedIDs(t, rdb)
	for _, id := range want {
		if got[id] != 1 {
			t.Errorf("intent %s: %d results, want 1", id, got[id])
		}
	}
	if r := trips.n.Load(); r > n/4 {
		t.Fatalf("%d XADD round trips for %d results, want at most %d", r, n, n/4)
	}
	t.Logf("%d XADD round trips for %d results", trips.n.Load(), n)
}

// When a staged pipeline's replies are lost (Redis ran it), every wait of
// it fails and Serve publishes those results again through Publish: every
// intent has a result and is acknowledged, and the only duplicates are of
// the results that pipeline carried, which consumers deduplicating by
// intent id tolerate.
func TestServeRepublishesAFailedStagedWrite(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	proxy := srv.Proxy(t)
	sinkClient, _ := countedClient(t, proxy.Addr)
	const n = 100
	want := addIntents(t, rdb, "republish", n)
	proxy.CutReplyOn(want[n/2]) // the pipeline that carries its result
	e, calls := effectortest.Effector(t, effector.NewMemoryStore())
	err := serveUntil(t, newSource(t, rdb, "c1"), redisstream.NewSink(sinkClient, results), e, func() bool {
		return len(publishedIDs(t, rdb)) == n && pending(t, rdb) == 0
	})
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if proxy.Cut() != 1 {
		t.Fatalf("%d connections cut, want 1", proxy.Cut())
	}
	got := publishedIDs(t, rdb)
	dups := 0
	for _, id := range want {
		if got[id] == 0 || calls.Of(id) != 1 {
			t.Errorf("intent %s: %d results, %d executions; want a result and 1 execution", id, got[id], calls.Of(id))
		}
		dups += got[id] - 1
	}
	if dups == 0 {
		t.Fatal("no duplicates: the cut pipeline's results were not published again (or the cut missed the sink)")
	}
	t.Logf("%d results published twice", dups)
}
