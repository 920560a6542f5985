package redisstore

import (
	"context"
	"fmt"
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
