package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// TestOnACluster runs the store on a three-node Redis Cluster, where its
// scripts fail with CROSSSLOT unless an intent's record and attempt marker
// share a slot. The subtests share the cluster (it takes seconds to form),
// kept apart by key prefixes.
func TestOnACluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster := redistest.StartCluster(t, 3)
	rdb := cluster.Client(t)

	t.Run("the conformance suite passes", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		storetest.Run(t, func(t *testing.T) effector.DedupStore {
			return New(rdb, WithKeyPrefix(fmt.Sprintf("conformance-%d:", n.Add(1))))
		})
	})

	t.Run("Open checks every master and refuses the cluster's unpersisted nodes", func(t *testing.T) {
		t.Parallel()
		var pe *PersistenceError
		if _, err := Open(ctx, rdb, WithKeyPrefix("open:")); !errors.As(err, &pe) {
			t.Fatalf("Open on a cluster that persists nothing = %v, want a *PersistenceError", err)
		}
		if _, err := Open(ctx, rdb, WithKeyPrefix("open:"), WithUnpersistedServer(), WithLogger(slog.New(slog.DiscardHandler))); err != nil {
			t.Fatalf("Open with WithUnpersistedServer = %v", err)
		}
	})

	t.Run("claims from two cluster clients give each intent one owner", func(t *testing.T) {
		t.Parallel()
		storetest.ClaimContended(t, 50, 4, New(rdb, WithKeyPrefix("contended:")), New(rdb, WithKeyPrefix("contended:")))
	})

	// Intents delivered twice each run once, the redelivery gets the
	// recorded result, and the intents' records spread over every node.
	t.Run("an effector executes each intent once", func(t *testing.T) {
		t.Parallel()
		e, calls := effectortest.Effector(t, New(rdb, WithKeyPrefix("effector:")))
		const intents = 30
		for i := range intents {
			in := effectortest.Intent(fmt.Sprintf("entity-%d", i), 1, 0)
			first, err := e.Process(ctx, in)
			if err != nil || first.Status != intent.StatusOK {
				t.Fatalf("Process(%s) = %s %q, %v; want ok", in.ID, first.Status, first.ErrorMessage, err)
			}
			again, err := e.Process(ctx, in)
			if err != nil || string(again.Payload) != string(first.Payload) || again.CompletedAtMs != first.CompletedAtMs {
				t.Fatalf("Process(%s) redelivered = %s %q, %v; want the recorded %s", in.ID, again.Status, again.Payload, err, first.Payload)
			}
			if n := calls.Of(in.ID); n != 1 {
				t.Fatalf("intent %s executed %d times, want once", in.ID, n)
			}
		}
		var empty atomic.Int32
		err := rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			keys, err := node.Keys(ctx, "effector:*").Result()
			if len(keys) == 0 {
				empty.Add(1)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := empty.Load(); n != 0 {
			t.Fatalf("%d of 3 nodes hold no record of %d intents, want the intents spread over every node", n, intents)
		}
	})

	// A batch's intents spread over every node: each node gets one
	// pipeline of its own intents, at once, and every item is answered.
	t.Run("a batch is one pipeline to each node", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		perNode := map[string][]int{}
		crdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs})
		crdb.OnNewNode(func(node *redis.Client) {
			rec := &pipelines{onPipeline: func(keys []string) {
				if len(keys) > 0 {
					mu.Lock()
					perNode[node.Options().Addr] = append(perNode[node.Options().Addr], len(keys))
					mu.Unlock()
				}
			}}
			node.AddHook(rec)
		})
		t.Cleanup(func() { crdb.Close() })
		s := New(crdb, WithKeyPrefix("batch:"))
		storetest.MustClaim(t, s, "warm-a", time.Minute) // load the script on some nodes; NOSCRIPT on the others is handled
		comps := claimAll(t, s, claimReqs("spread", 90), []byte("r"))
		errs := make([]error, len(comps))
		s.CompleteBatch(ctx, comps, errs)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("completion %d: %v", i, err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(perNode) != 3 {
			t.Fatalf("pipelines went to %d nodes (%v), want all 3", len(perNode), perNode)
		}
		for addr, sizes := range perNode {
			total := 0
			for _, n := range sizes {
				total += n
			}
			if len(sizes) != 2 || total < 2*15 {
				t.Errorf("node %s got pipelines of %v calls, want one of claims and one of completions, of its share of 90 intents", addr, sizes)
			}
		}
		check := New(rdb, WithKeyPrefix("batch:"), WithBatch(1))
		for _, c := range comps {
			storetest.WantState(t, check, c.IntentID, effector.Done)
		}
	})

	// A key prefix with a hash tag of its own puts every intent in one
	// slot: a batch is then one script call, on that slot's node.
	t.Run("a batch of one slot is one script call", func(t *testing.T) {
		t.Parallel()
		crdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs})
		t.Cleanup(func() { crdb.Close() })
		rec := &scripts{}
		crdb.OnNewNode(func(node *redis.Client) { node.AddHook(rec) })
		s := New(crdb, WithKeyPrefix("{all}:"))
		for _, sc := range []*redis.Script{claimBatchScript, completeBatchScript} {
			if err := sc.Load(ctx, crdb).Err(); err != nil {
				t.Fatal(err)
			}
		}
		comps := claimAll(t, s, claimReqs("one-slot", 50), []byte("r"))
		errs := make([]error, len(comps))
		s.CompleteBatch(ctx, comps, errs)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("completion %d: %v", i, err)
			}
		}
		alone, pipelines := rec.reset()
		var calls []int
		calls = append(calls, alone...)
		for _, p := range pipelines {
			calls = append(calls, p...)
		}
		if fmt.Sprint(calls) != "[50 50]" {
			t.Fatalf("a batch of 50 claims and one of 50 completions in one slot went as calls of %v items, want one call each", calls)
		}
		check := New(rdb, WithKeyPrefix("{all}:"), WithBatch(1))
		for _, c := range comps {
			storetest.WantState(t, check, c.IntentID, effector.Done)
		}
	})

	// The oracle for keySlot, which the unit tests and the fuzz target trust.
	t.Run("keySlot agrees with CLUSTER KEYSLOT", func(t *testing.T) {
		t.Parallel()
		keys := []string{"", "somekey", "foo{hash_tag}", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{", "}", "{}", "}{x}", "\xff\x00{\xfe}"}
		for _, prefix := range []string{"", "p:", "{t}:", "a{", "}", "x{y", "{{}"} {
			for _, id := range []string{"", "i", "{", "}", "{}", "a}b", "}{", "\xff"} {
				s := New(nil, WithKeyPrefix(prefix))
				keys = append(keys, s.keys(id)...)
			}
		}
		for _, k := range keys {
			want, err := rdb.ClusterKeySlot(ctx, k).Result()
			if err != nil {
				t.Fatalf("CLUSTER KEYSLOT %q: %v", k, err)
			}
			if got := keySlot(k); int64(got) != want {
				t.Errorf("keySlot(%q) = %d, CLUSTER KEYSLOT says %d", k, got, want)
			}
		}
	})
}
