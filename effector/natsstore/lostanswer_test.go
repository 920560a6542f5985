package natsstore_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstore"
	"github.com/beam-agents/toolreg/internal/natstest"
)

// loser forwards a client's TCP connections to a server and loses the
// answer to the next publish whose bytes hold a pattern: the publish
// reaches the server, then the proxy either cuts the connection (the
// client reconnects and its request fails with "disconnected") or holds
// every byte back from the client until released (the request times out).
type loser struct {
	*natstest.Proxy
	pattern atomic.Pointer[[]byte]
	cut     atomic.Bool // cut the connection, rather than hold the answer
	held    atomic.Bool // the answer is being held back
	hits    atomic.Int32
}

func startLoser(t *testing.T, target string) *loser {
	t.Helper()
	p := &loser{}
	p.Proxy = natstest.StartProxy(t, target, func(c *natstest.Conn, fromClient bool, b []byte) {
		for !fromClient && p.held.Load() {
			if c.Wait(5 * time.Millisecond) {
				return
			}
		}
		if pat := p.pattern.Load(); fromClient && pat != nil && bytes.Contains(b, *pat) && p.pattern.CompareAndSwap(pat, nil) {
			p.hits.Add(1)
			if !p.cut.Load() {
				p.held.Store(true)
				return
			}
			// The publish goes on to the server; its answer will find
			// no client.
			c.Mute()
			go func() {
				time.Sleep(100 * time.Millisecond)
				c.Close()
			}()
		}
	})
	return p
}

// loseNext loses the answer to the next publish holding pattern, cutting
// the connection if cut, else holding the answer until release.
func (p *loser) loseNext(pattern string, cut bool) {
	b := []byte(pattern)
	p.cut.Store(cut)
	p.pattern.Store(&b)
}

func (p *loser) release() { p.held.Store(false) }

// A claim whose create reaches the server but whose answer is lost, to a
// cut connection or to a wait past the call's context, must not leave a
// record that looks like another owner's: when the call returns, it either
// answers Claimed with the token that owns the record, or an error after
// which the next claim of the intent on the same store answers Claimed
// (not InFlight until the lease runs out, and not a reclaim).
func TestALostAnswerDoesNotLookLikeAnotherOwner(t *testing.T) {
	p := startLoser(t, cluster.Hosts()[0])
	nc, err := nats.Connect(p.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.IgnoreDiscoveredServers())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	peer := open(t, cluster)
	s, err := natsstore.Open(ctx, js, peer.Bucket(), natsstore.WithAttemptTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	pattern := "PUB $KV." + s.Bucket() + "."
	const lease = time.Hour

	claimOne := func(ctx context.Context, id string, batch bool) (effector.Claim, error) {
		if !batch {
			return s.Claim(ctx, id, call, lease)
		}
		out := make([]effector.ClaimOutcome, 1)
		s.ClaimBatch(ctx, []effector.ClaimRequest{{IntentID: id, Call: call, Lease: lease}}, out)
		return out[0].Claim, out[0].Err
	}
	// owns checks that the claim cl (or, after err, the next claim of id
	// on s) owns id's record: it completes, and a peer reads the result.
	owns := func(t *testing.T, id string, cl effector.Claim, err error, batch bool) {
		t.Helper()
		if err != nil {
			t.Logf("the claim answered %v; claiming again", err)
			if cl, err = claimOne(ctxT(t), id, batch); err != nil {
				t.Fatalf("the next claim: %v", err)
			}
		}
		if cl.State != effector.Claimed || cl.Reclaimed || cl.Attempts != 1 {
			t.Fatalf("claim = %+v; want Claimed, attempt 1, not reclaimed: the lost create's record looks like another owner's", cl)
		}
		if err := s.Complete(ctxT(t), id, cl.Token, []byte("ran once"), time.Hour); err != nil {
			t.Fatalf("completing with the claim's token: %v", err)
		}
		got, err := peer.Claim(ctxT(t), id, call, lease)
		if err != nil || got.State != effector.Done || string(got.Result) != "ran once" {
			t.Fatalf("a peer's claim = %+v, %v; want Done with the result", got, err)
		}
	}

	// held claims id with lease, its every answer held past the call's
	// context, and wants the error.
	held := func(t *testing.T, id string, lease time.Duration) {
		t.Helper()
		before := p.hits.Load()
		p.loseNext(pattern, false)
		cctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		cl, err := s.Claim(cctx, id, call, lease)
		cancel()
		p.release()
		if p.hits.Load() == before || err == nil {
			t.Fatalf("claim with its answer held = %+v, %v (creates seen %d); want an error after a create", cl, err, p.hits.Load()-before)
		}
	}
	t.Run("the claim after a lost answer renews the lease of the record it finds its own", func(t *testing.T) {
		const lease = 2 * time.Second
		held(t, "renew", lease)
		time.Sleep(lease) // the first claim's lease has run out
		cl, err := s.Claim(ctxT(t), "renew", call, lease)
		if err != nil || cl.State != effector.Claimed || cl.Reclaimed {
			t.Fatalf("the next claim = %+v, %v; want Claimed, not reclaimed", cl, err)
		}
		if got, err := peer.Claim(ctxT(t), "renew", call, lease); err != nil || got.State != effector.InFlight {
			t.Fatalf("a peer's claim at once = %+v, %v; want InFlight: the lease was renewed", got, err)
		}
	})
	t.Run("of two claims at once after a lost answer, one takes the token", func(t *testing.T) {
		held(t, "two", time.Hour)
		var wg sync.WaitGroup
		got := make([]effector.Claim, 2)
		for i := range got {
			wg.Go(func() {
				var err error
				if got[i], err = s.Claim(ctxT(t), "two", call, time.Hour); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		claimed := 0
		for _, c := range got {
			if c.State == effector.Claimed {
				claimed++
			}
		}
		if claimed != 1 {
			t.Fatalf("two claims at once = %+v; want one Claimed, one InFlight", got)
		}
	})

	for _, batch := range []bool{false, true} {
		name := "single"
		if batch {
			name = "batch"
		}
		t.Run(name+": the connection cut after the create reached the server", func(t *testing.T) {
			id := "cut-" + name
			before := p.hits.Load()
			p.loseNext(pattern, true)
			cl, err := claimOne(ctxT(t), id, batch)
			if p.hits.Load() == before {
				t.Fatal("the proxy saw no create")
			}
			owns(t, id, cl, err, batch)
		})
		t.Run(name+": the answer held past the call's context", func(t *testing.T) {
			id := "held-" + name
			before := p.hits.Load()
			p.loseNext(pattern, false)
			cctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			cl, err := claimOne(cctx, id, batch)
			cancel()
			p.release()
			if p.hits.Load() == before {
				t.Fatal("the proxy saw no create")
			}
			if err == nil {
				t.Fatalf("a claim whose every answer was held answered %+v", cl)
			}
			owns(t, id, cl, err, batch)
		})
	}
}
