package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"

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
	rdb := redistest.StartCluster(t, 3).Client(t)

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
