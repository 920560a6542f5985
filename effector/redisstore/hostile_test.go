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

// A connection fails after the server ran the claims sent on it, before
// their replies are read (the proxy drops the replies and cuts it), and
// go-redis, with the options every client gets by default (MaxRetries 3),
// sends the same commands again on a new connection: each claim script runs
// a second time and finds the claim its first run took. Every caller must
// get an error or its true outcome, here Claimed with the token that holds
// the record: a caller told InFlight while it holds the claim itself leaves
// the intent unrun until its lease ends. Run for a pipeline of several
// callers' claims and for a claim sent alone (WithBatch(1)).
func TestAClaimSentAgainAfterItsReplyIsLostIsClaimed(t *testing.T) {
	for _, batched := range []bool{true, false} {
		t.Run(fmt.Sprintf("batched=%v", batched), func(t *testing.T) {
			ctx := context.Background()
			srv := redistest.Start(t)
			admin := srv.Client(t)
			proxy := srv.Proxy(t)
			rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr}) // go-redis's default retries
			defer rdb.Close()
			rec := &pipelines{}
			rdb.AddHook(rec)
			opts := []Option{WithKeyPrefix("resent:"), WithLanes(1)}
			if !batched {
				opts = append(opts, WithBatch(1))
			}
			s := New(rdb, opts...)
			if _, err := s.Claim(ctx, "warm", storetest.Call, time.Minute); err != nil { // loads the script
				t.Fatal(err)
			}
			n := 1
			release := func() {}
			if batched {
				n = 12
				release = occupy(t, admin, s)
			}
			proxy.CutReplyOn(s.key(fmt.Sprintf("c-%d", n/2)))
			errs := make([]error, n)
			claims := make([]effector.Claim, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { claims[i], errs[i] = s.Claim(ctx, fmt.Sprintf("c-%d", i), storetest.Call, time.Minute) })
			}
			if batched {
				waitFor(t, "every claim to queue", func() bool { return queued(s) == n })
			}
			release()
			wg.Wait()
			if proxy.Cut() == 0 {
				t.Fatal("the proxy cut no connection")
			}
			if batched {
				if got := len(rec.holding(s.key("c-0"))); got < 2 {
					t.Fatalf("the claims went in a pipeline of %d, want several", got)
				}
			}
			for i := range n {
				id := fmt.Sprintf("c-%d", i)
				v := admin.Get(ctx, s.key(id)).Val()
				switch {
				case errs[i] != nil:
					// Told it failed: the claim ran out by its lease, no one runs it before.
				case claims[i].State != effector.Claimed:
					t.Errorf("claim %s, sent again after its reply was lost: %s, want claimed (the record holds %q)", id, claims[i].State, truncate([]byte(v)))
				case !strings.HasSuffix(v, claims[i].Token):
					t.Errorf("claim %s is Claimed with token %q, but its record holds %q", id, claims[i].Token, v)
				case claims[i].Attempts != 1 || claims[i].Reclaimed:
					t.Errorf("claim %s: attempts %d, reclaimed %v; want its first attempt, not reclaimed", id, claims[i].Attempts, claims[i].Reclaimed)
				}
			}
		})
	}
}

// A completion queued among claims carries a result bigger than the server
// takes in one argument (proto-max-bulk-len, lowered to its least here, as
// a server configured against big values would be): the server refuses it
// by closing the connection it came on. That completion alone must fail;
// every claim queued beside it, before or after it, must be claimed, and
// hold its record. (Sent in one pipeline, all failed with the connection,
// the claims before it having taken their records; and the completion,
// retrying the connection's error, took down each pipeline it joined.)
func TestAnOversizedCallFailsAloneInItsPipeline(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	if err := admin.ConfigSet(ctx, "proto-max-bulk-len", "1mb").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr}) // go-redis's default retries
	defer rdb.Close()
	rec := &pipelines{}
	rdb.AddHook(rec)
	alone := &commands{}
	rdb.AddHook(alone)
	s := New(rdb, WithKeyPrefix("big:"), WithLanes(1))
	big, err := s.Claim(ctx, "big", storetest.Call, time.Minute) // also loads the claim script
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, "warm", "no-such-token", nil, time.Minute); err == nil { // loads the completion script
		t.Fatal("completing an unclaimed intent succeeded")
	}
	release := occupy(t, admin, s)
	const n = 12
	errs := make([]error, n)
	claims := make([]effector.Claim, n)
	var wg sync.WaitGroup
	claim := func(i int) {
		wg.Go(func() { claims[i], errs[i] = s.Claim(ctx, fmt.Sprintf("c-%d", i), storetest.Call, time.Minute) })
	}
	for i := range n / 2 {
		claim(i)
	}
	waitFor(t, "the first claims to queue", func() bool { return queued(s) == n/2 })
	// The completion retries its connection's error until its context
	// ends: that ends once the claims have returned.
	bigCtx, cancelBig := context.WithCancel(ctx)
	defer cancelBig()
	var bigErr error
	bigDone := make(chan struct{})
	go func() {
		defer close(bigDone)
		bigErr = s.Complete(bigCtx, "big", big.Token, make([]byte, 2<<20), time.Minute)
	}()
	waitFor(t, "the completion to queue or go alone", func() bool { return queued(s) == n/2+1 || alone.sent(s.key("big")) })
	for i := n / 2; i < n; i++ {
		claim(i)
	}
	waitFor(t, "every claim to queue", func() bool { return queued(s) >= n })
	release()
	wg.Wait()
	cancelBig()
	<-bigDone
	if got := len(rec.holding(s.key("c-0"))); got < 2 {
		t.Fatalf("the claims went in a pipeline of %d calls, want several", got)
	}
	if bigErr == nil {
		t.Error("the oversized completion succeeded")
	}
	for i := range n {
		id := fmt.Sprintf("c-%d", i)
		switch {
		case errs[i] != nil:
			t.Errorf("claim %s failed with the oversized completion of its pipeline: %v", id, errs[i])
		case claims[i].State != effector.Claimed:
			t.Errorf("claim %s: %s, want claimed", id, claims[i].State)
		case !strings.HasSuffix(admin.Get(ctx, s.key(id)).Val(), claims[i].Token):
			t.Errorf("claim %s is Claimed with a token its record does not hold", id)
		}
	}
	storetest.WantState(t, New(admin, WithKeyPrefix("big:"), WithBatch(1)), "big", effector.InFlight)
}

// commands records the first key of each script a client sends on its own,
// not in a pipeline.
type commands struct {
	mu   sync.Mutex
	keys []string
}

func (c *commands) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 3 && (a[0] == "evalsha" || a[0] == "eval") {
			c.mu.Lock()
			c.keys = append(c.keys, fmt.Sprint(a[3]))
			c.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}
func (c *commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *commands) sent(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.keys, key)
}

// Duplicate delivery: several workers claim one intent, for the same call,
// and their claims go in one pipeline beside other intents' claims. Exactly
// one is Claimed, the others see its claim (InFlight); none fails, and the
// pipeline's other claims are granted.
func TestDuplicateClaimsOfOneIntentInOnePipeline(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	rdb := srv.Client(t)
	rec := &pipelines{}
	rdb.AddHook(rec)
	s := New(rdb, WithKeyPrefix("dup:"), WithLanes(1))
	if _, err := s.Claim(ctx, "warm", storetest.Call, time.Minute); err != nil {
		t.Fatal(err)
	}
	release := occupy(t, admin, s)
	ids := []string{"a", "dup", "b", "dup", "c", "dup", "dup", "d"}
	errs := make([]error, len(ids))
	claims := make([]effector.Claim, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { claims[i], errs[i] = s.Claim(ctx, id, storetest.Call, time.Minute) })
	}
	waitFor(t, "every claim to queue", func() bool { return queued(s) == len(ids) })
	release()
	wg.Wait()
	if got := len(rec.holding(s.key("dup"))); got != len(ids) {
		t.Fatalf("the duplicate claims went in a pipeline of %d calls, want all %d", got, len(ids))
	}
	won := 0
	for i, id := range ids {
		switch {
		case errs[i] != nil:
			t.Errorf("claim %d of %s failed: %v", i, id, errs[i])
		case id != "dup" && claims[i].State != effector.Claimed:
			t.Errorf("claim of %s: %s, want claimed", id, claims[i].State)
		case id == "dup" && claims[i].State == effector.Claimed:
			won++
			if v := admin.Get(ctx, s.key(id)).Val(); !strings.HasSuffix(v, claims[i].Token) {
				t.Errorf("the winning claim's token is not its record's")
			}
		case id == "dup" && claims[i].State != effector.InFlight:
			t.Errorf("losing claim %d of dup: %s, want in-flight", i, claims[i].State)
		}
	}
	if won != 1 {
		t.Errorf("%d duplicate claims of one intent were Claimed, want exactly 1", won)
	}
}

// An owner's lease ran out, and its late completion goes in one pipeline
// with the claim of the worker that takes the intent over, in either order:
// the new owner is Claimed (Reclaimed), the late completion is refused with
// ErrNotOwner alone, and the new owner's claim, not a result, is stored,
// which the new owner then completes.
func TestALateCompletionAndTheTakeoverInOnePipeline(t *testing.T) {
	for _, completeFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("completeFirst=%v", completeFirst), func(t *testing.T) {
			ctx := context.Background()
			srv := redistest.Start(t)
			admin := srv.Client(t)
			s := New(srv.Client(t), WithKeyPrefix("late:"), WithLanes(1))
			old, err := s.Claim(ctx, "x", storetest.Call, time.Millisecond)
			if err != nil || old.State != effector.Claimed {
				t.Fatalf("first claim: %+v, %v", old, err)
			}
			if err := s.Complete(ctx, "warm", "no-such-token", nil, time.Minute); err == nil {
				t.Fatal("completing an unclaimed intent succeeded")
			}
			waitFor(t, "the first lease to run out", func() bool { return admin.Exists(ctx, s.key("x")).Val() == 0 })
			release := occupy(t, admin, s)
			var lateErr, claimErr error
			var takeover effector.Claim
			var wg sync.WaitGroup
			late := func() { wg.Go(func() { lateErr = s.Complete(ctx, "x", old.Token, []byte("late"), time.Minute) }) }
			claim := func() { wg.Go(func() { takeover, claimErr = s.Claim(ctx, "x", storetest.Call, time.Minute) }) }
			first, second := claim, late
			if completeFirst {
				first, second = late, claim
			}
			first()
			waitFor(t, "the first call to queue", func() bool { return queued(s) == 1 })
			second()
			waitFor(t, "both calls to queue", func() bool { return queued(s) == 2 })
			release()
			wg.Wait()
			if !errors.Is(lateErr, effector.ErrNotOwner) {
				t.Errorf("the late completion returned %v, want ErrNotOwner", lateErr)
			}
			if claimErr != nil || takeover.State != effector.Claimed || !takeover.Reclaimed || takeover.Attempts != 2 {
				t.Fatalf("the takeover claim: %+v, %v; want claimed, reclaimed, attempt 2", takeover, claimErr)
			}
			storetest.WantState(t, New(admin, WithKeyPrefix("late:"), WithBatch(1)), "x", effector.InFlight)
			if err := s.Complete(ctx, "x", takeover.Token, []byte("new"), time.Minute); err != nil {
				t.Fatalf("the new owner's completion: %v", err)
			}
		})
	}
}

// A lane's pipeline loses its connection (the proxy cuts every connection
// that sends its poisoned claim, go-redis's retries included) while more
// calls queue on the same lane behind it, past what one pipeline takes: the
// cut pipeline's calls fail, and the calls behind it go out in the lane's
// next pipeline, on another connection, and are claimed. A dead connection
// does not wedge its lane.
func TestACutPipelineDoesNotWedgeItsLane(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	proxy := srv.Proxy(t)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr}) // go-redis's default retries
	defer rdb.Close()
	rec := &pipelines{}
	rdb.AddHook(rec)
	const n = 6 // one pipeline's worth
	s := New(rdb, WithKeyPrefix("wedge:"), WithLanes(1), WithBatch(n))
	if _, err := s.Claim(ctx, "warm", storetest.Call, time.Minute); err != nil {
		t.Fatal(err)
	}
	release := occupy(t, admin, s)
	ids := make([]string, 2*n)
	for i := range ids {
		ids[i] = fmt.Sprintf("c-%02d", i)
	}
	ids[n/2] = "poison"
	errs := make([]error, len(ids))
	claims := make([]effector.Claim, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { claims[i], errs[i] = s.Claim(ctx, id, storetest.Call, time.Minute) })
		waitFor(t, "the claim to queue", func() bool { return queued(s) == i+1 })
	}
	proxy.CutOn(s.key("poison"))
	release()
	wg.Wait()
	if proxy.Cut() == 0 {
		t.Fatal("the proxy cut no connection")
	}
	for i, id := range ids {
		switch {
		case i < n:
			if errs[i] == nil {
				t.Errorf("claim %s of the cut pipeline succeeded", id)
			}
		case errs[i] != nil || claims[i].State != effector.Claimed:
			t.Errorf("claim %s queued behind the cut pipeline: %+v, %v; want Claimed", id, claims[i], errs[i])
		}
	}
	if got := rec.holding(s.key(ids[n])); len(got) != n || slices.Contains(got, s.key("poison")) {
		t.Errorf("the claims behind the cut pipeline went in %v, want a pipeline of their own %d", got, n)
	}
}
