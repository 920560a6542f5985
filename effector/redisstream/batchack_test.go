package redisstream_test

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/redisstream"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// xackCalls is how many XACK commands the server has run.
func xackCalls(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`cmdstat_xack:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// receiveAll takes n deliveries from src.
func receiveAll(t *testing.T, src *redisstream.Source, n int) []effector.Delivery {
	t.Helper()
	var ds []effector.Delivery
	for len(ds) < n {
		var err error
		if ds, err = src.ReceiveBatch(context.Background(), n-len(ds), ds); err != nil {
			t.Fatal(err)
		}
	}
	return ds
}

// AckBatch acknowledges a batch with one XACK; acknowledging the entries
// again, one by one, is harmless; and a batch holding a delivery the
// source did not hand out is refused whole, acknowledging nothing.
func TestAckBatchAcknowledgesWithOneXACK(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	addIntents(t, rdb, "ackbatch", 12)
	src := newSource(t, rdb, "c1", redisstream.WithBatch(12))
	ds := receiveAll(t, src, 12)
	for _, d := range ds {
		if d.Acker != src {
			t.Fatalf("delivery %s has Acker %v, want its source", d.Pos, d.Acker)
		}
	}

	other := newSource(t, rdb, "c2")
	foreign := ds[0]
	foreign.Intent = effectortest.Intent("ackbatch", 1, 0) // same id, not the one handed out
	if err := src.AckBatch(ctx, []effector.Delivery{ds[1], foreign}); err == nil {
		t.Fatal("AckBatch took a delivery it did not hand out")
	}
	if err := other.AckBatch(ctx, ds[:2]); err == nil {
		t.Fatal("another source's AckBatch took this source's deliveries")
	}
	if n := pending(t, rdb); n != 12 {
		t.Fatalf("%d entries pending after refused batches, want all 12", n)
	}

	before := xackCalls(t, rdb)
	if err := src.AckBatch(ctx, ds[:10]); err != nil {
		t.Fatalf("AckBatch: %v", err)
	}
	if got := xackCalls(t, rdb) - before; got != 1 {
		t.Errorf("AckBatch of 10 deliveries ran %d XACKs, want 1", got)
	}
	if n := pending(t, rdb); n != 2 {
		t.Fatalf("%d entries pending after a batch of 10 of 12, want 2", n)
	}
	for _, d := range ds {
		if err := d.Ack(ctx); err != nil {
			t.Fatalf("Ack of %s after its batch: %v", d.Pos, err)
		}
	}
	if n := pending(t, rdb); n != 0 {
		t.Fatalf("%d entries pending, want 0", n)
	}
	if err := src.AckBatch(ctx, ds[10:]); err == nil {
		t.Error("AckBatch took deliveries already acknowledged through their Ack")
	}
}

// A connection that fails mid-batch leaves the batch unacknowledged (the
// XACK never reached the server) or acknowledged (its reply was lost);
// either way AckBatch fails, and acknowledging each delivery again through
// its Ack succeeds and leaves nothing pending.
func TestAckBatchOverAConnectionThatFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		cutReply   bool
		pendingNow int64 // pending right after the failed AckBatch
	}{
		{"before the server gets the XACK", false, 6},
		{"after the server ran the XACK", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			rdb := srv.Client(t)
			ctx := context.Background()
			addIntents(t, rdb, "cut", 6)
			proxy := srv.Proxy(t)
			viaProxy := redis.NewClient(&redis.Options{Addr: proxy.Addr, MaxRetries: -1})
			t.Cleanup(func() { viaProxy.Close() })
			src, err := redisstream.NewSource(ctx, viaProxy, intents, group, "c1", redisstream.WithBlock(50*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			ds := receiveAll(t, src, 6)
			if tc.cutReply {
				proxy.CutReplyOn("xack")
			} else {
				proxy.CutOn("xack")
			}
			if err := src.AckBatch(ctx, ds); err == nil {
				t.Fatal("AckBatch over a cut connection returned nil")
			}
			if n := pending(t, rdb); n != tc.pendingNow {
				t.Fatalf("%d entries pending after the failed AckBatch, want %d", n, tc.pendingNow)
			}
			proxy.CutOn("no-such-marker") // the connection works again
			for _, d := range ds {
				if err := d.Ack(ctx); err != nil {
					t.Fatalf("Ack of %s after the failed batch: %v", d.Pos, err)
				}
			}
			if n := pending(t, rdb); n != 0 {
				t.Fatalf("%d entries pending after every Ack, want 0", n)
			}
		})
	}
}

// Serve over a stream whose first batch acknowledgement loses its
// connection (before or after the server ran it) answers every intent
// exactly once: one result each, the tool run once each, nothing left
// pending.
func TestServeAnswersEveryIntentOnceWhenABatchAckFails(t *testing.T) {
	t.Parallel()
	for _, cutReply := range []bool{false, true} {
		name := "when the XACK never reaches the server"
		if cutReply {
			name = "when the XACK's reply is lost"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			rdb := srv.Client(t)
			ctx := context.Background()
			ids := addIntents(t, rdb, "serve-cut", 60)
			proxy := srv.Proxy(t)
			viaProxy := redis.NewClient(&redis.Options{Addr: proxy.Addr, MaxRetries: -1})
			t.Cleanup(func() { viaProxy.Close() })
			src, err := redisstream.NewSource(ctx, viaProxy, intents, group, "c1", redisstream.WithBlock(50*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			if cutReply {
				proxy.CutReplyOn("xack")
			} else {
				proxy.CutOn("xack")
				go func() { // the connection comes back once it failed
					for proxy.Cut() == 0 {
						time.Sleep(5 * time.Millisecond)
					}
					time.Sleep(50 * time.Millisecond)
					proxy.CutOn("no-such-marker")
				}()
			}
			e, calls := effectortest.Effector(t, effector.NewMemoryStore())
			err = serveUntil(t, src, redisstream.NewSink(rdb, results), e, func() bool {
				return len(publishedIDs(t, rdb)) == len(ids) && pending(t, rdb) == 0
			})
			if err != nil {
				t.Fatalf("Serve: %v", err)
			}
			if proxy.Cut() == 0 {
				t.Fatal("no connection was cut: the test proves nothing")
			}
			got := publishedIDs(t, rdb)
			for _, id := range ids {
				if got[id] != 1 || calls.Of(id) != 1 {
					t.Errorf("intent %s: %d results, %d executions; want 1 and 1", id, got[id], calls.Of(id))
				}
			}
		})
	}
}
