package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// One call of a pipeline fails on the server (its key holds a list, so the
// script's GET fails with WRONGTYPE): it alone fails, with its own error,
// and every other claim of the same pipeline is claimed.
func TestBatchOneFailingClaimFailsAlone(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	s := New(rdb, WithKeyPrefix("batch:"), WithLanes(1))
	if err := rdb.RPush(ctx, s.key("poison"), "x").Err(); err != nil {
		t.Fatal(err)
	}
	// Pause writes so the first claim (the leader's) waits on the server
	// while the others queue behind it and go in one pipeline.
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", "300", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	const n = 24
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("ok-%d", i)
	}
	ids[n/2] = "poison"
	errs := make([]error, n)
	claims := make([]effector.Claim, n)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { claims[i], errs[i] = s.Claim(ctx, id, storetest.Call, time.Minute) })
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.lanes[0].group.Queued() < n-1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if q := s.lanes[0].group.Queued(); q < n-1 {
		t.Fatalf("%d claims queued behind the leader, want %d", q, n-1)
	}
	wg.Wait()
	if got := s.lanes[0].group.Batches.Load(); got > 3 {
		t.Errorf("%d claims took %d round trips, want at most 3", n, got)
	}
	for i, id := range ids {
		switch {
		case id == "poison":
			if errs[i] == nil || !strings.Contains(errs[i].Error(), "WRONGTYPE") || !strings.Contains(errs[i].Error(), `"poison"`) {
				t.Errorf("the poisoned claim returned %v, want its own WRONGTYPE error", errs[i])
			}
		case errs[i] != nil:
			t.Errorf("claim %s failed with its pipeline's poisoned claim: %v", id, errs[i])
		case claims[i].State != effector.Claimed:
			t.Errorf("claim %s: %s, want claimed", id, claims[i].State)
		default:
			storetest.WantState(t, New(rdb, WithKeyPrefix("batch:"), WithBatch(1)), id, effector.InFlight)
		}
	}
}

// pipelines records the keys of each pipeline a client sends, and runs
// onPipeline (if set) before sending one.
type pipelines struct {
	mu         sync.Mutex
	sent       [][]string
	onPipeline func(keys []string)
}

func (p *pipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (p *pipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (p *pipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var keys []string
		for _, c := range cmds {
			if a := c.Args(); len(a) > 3 && a[0] == "evalsha" {
				keys = append(keys, fmt.Sprint(a[3]))
			}
		}
		p.mu.Lock()
		p.sent = append(p.sent, keys)
		on := p.onPipeline
		p.mu.Unlock()
		if on != nil {
			on(keys)
		}
		return next(ctx, cmds)
	}
}

// holding returns the keys of the pipeline that held key.
func (p *pipelines) holding(key string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, keys := range p.sent {
		if slices.Contains(keys, key) {
			return keys
		}
	}
	return nil
}

// occupy pauses the server's writes and has one claim out on each of s's
// lanes, waiting on the server, so that the claims that follow queue on
// the lanes. It returns a function that unpauses the server and waits for
// those claims.
func occupy(t *testing.T, admin *redis.Client, s *Store) (release func()) {
	t.Helper()
	ctx := context.Background()
	if err := admin.Do(ctx, "CLIENT", "PAUSE", "20000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range s.lanes {
		wg.Go(func() {
			if _, err := s.Claim(ctx, fmt.Sprintf("occupy-%d", i), storetest.Call, time.Minute); err != nil {
				t.Errorf("occupying claim: %v", err)
			}
		})
	}
	waitFor(t, "a claim out on every lane", func() bool {
		for _, l := range s.lanes {
			if !l.group.Leading() || l.calls.Load() != 1 {
				return false
			}
		}
		return true
	})
	return func() {
		if err := admin.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
}

func queued(s *Store) (n int) {
	for _, l := range s.lanes {
		n += l.group.Queued()
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
	}
}

// Pipelines go out on several lanes at once, and the connection of one of
// them fails mid-flight (a proxy cuts it as it sends the poisoned claim, so
// none of its calls reaches the server): every call of that pipeline fails,
// with the connection's error, and every call of the other lane's pipeline,
// out at the same time, is claimed.
func TestLanesACutConnectionFailsOnlyItsPipeline(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	proxy := srv.Proxy(t)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr})
	defer rdb.Close()
	rec := &pipelines{}
	rdb.AddHook(rec)
	s := New(rdb, WithKeyPrefix("lanes:"), WithLanes(2))
	if _, err := s.Claim(ctx, "warm", storetest.Call, time.Minute); err != nil { // loads the script
		t.Fatal(err)
	}
	release := occupy(t, admin, s)
	const n = 20
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("ok-%d", i)
	}
	ids[n/2] = "poison"
	errs := make([]error, n)
	claims := make([]effector.Claim, n)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { claims[i], errs[i] = s.Claim(ctx, id, storetest.Call, time.Minute) })
	}
	waitFor(t, "every claim to queue", func() bool { return queued(s) == n })
	proxy.CutOn(s.key("poison"))
	release()
	wg.Wait()
	if proxy.Cut() == 0 {
		t.Fatal("the proxy cut no connection")
	}
	cut := rec.holding(s.key("poison"))
	if len(cut) < 2 || len(cut) == n {
		t.Fatalf("the poisoned claim went in a pipeline of %d calls, want several but not all %d: %v", len(cut), n, cut)
	}
	other := 0
	for i, id := range ids {
		key := s.key(id)
		switch {
		case slices.Contains(cut, key):
			if errs[i] == nil {
				t.Errorf("claim %s of the cut pipeline succeeded (%s), want its connection's error", id, claims[i].State)
			}
			if admin.Exists(ctx, key).Val() != 0 {
				t.Errorf("claim %s of the cut pipeline reached the server", id)
			}
		case errs[i] != nil:
			t.Errorf("claim %s, of the other lane's pipeline, failed with the cut one: %v", id, errs[i])
		case claims[i].State != effector.Claimed:
			t.Errorf("claim %s: %s, want claimed", id, claims[i].State)
		default:
			other++
			storetest.WantState(t, New(admin, WithKeyPrefix("lanes:"), WithBatch(1)), id, effector.InFlight)
		}
	}
	if other < 2 {
		t.Errorf("%d claims went outside the cut pipeline, want the other lane's pipeline of several", other)
	}
}

// On lanes, a caller whose context ends while its call is queued returns
// its context's error and its call is never sent; a caller whose context
// ends once its pipeline is out fails no other call of that pipeline.
func TestLanesCancelledCallers(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	rdb := srv.Client(t)
	rec := &pipelines{}
	rdb.AddHook(rec)
	s := New(rdb, WithKeyPrefix("cancel:"), WithLanes(2))
	if _, err := s.Claim(ctx, "warm", storetest.Call, time.Minute); err != nil {
		t.Fatal(err)
	}
	const n = 16
	ctxs := make([]context.Context, n)
	cancels := make([]context.CancelFunc, n)
	for i := range ctxs {
		ctxs[i], cancels[i] = context.WithCancel(ctx)
		defer cancels[i]()
	}
	queuedGone := map[int]bool{1: true, 6: true, 11: true} // cancelled while queued
	const inFlight = 4                                     // cancelled once its pipeline is out
	rec.onPipeline = func(keys []string) {
		if slices.Contains(keys, s.key("c-4")) {
			cancels[inFlight]()
		}
	}
	release := occupy(t, admin, s)
	errs := make([]error, n)
	claims := make([]effector.Claim, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { claims[i], errs[i] = s.Claim(ctxs[i], fmt.Sprintf("c-%d", i), storetest.Call, time.Minute) })
	}
	waitFor(t, "every claim to queue", func() bool { return queued(s) == n })
	for i := range queuedGone {
		cancels[i]()
	}
	waitFor(t, "the cancelled claims to leave their queues", func() bool { return queued(s) == n-len(queuedGone) })
	release()
	wg.Wait()
	for i := range n {
		id := fmt.Sprintf("c-%d", i)
		switch {
		case queuedGone[i]:
			if !errors.Is(errs[i], context.Canceled) {
				t.Errorf("claim %s cancelled while queued returned %v, want context.Canceled", id, errs[i])
			}
			if admin.Exists(ctx, s.key(id)).Val() != 0 || rec.holding(s.key(id)) != nil {
				t.Errorf("claim %s cancelled while queued was sent", id)
			}
		case i == inFlight && errs[i] != nil:
			// Its caller left; whatever it returned, the others must hold.
		case errs[i] != nil:
			t.Errorf("claim %s failed: %v", id, errs[i])
		case claims[i].State != effector.Claimed:
			t.Errorf("claim %s: %s, want claimed", id, claims[i].State)
		}
	}
	if len(rec.holding(s.key("c-4"))) < 2 {
		t.Errorf("the claim cancelled in flight went in a pipeline of %d calls, want several", len(rec.holding(s.key("c-4"))))
	}
}
