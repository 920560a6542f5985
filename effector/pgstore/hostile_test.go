package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

// Callers whose contexts end while the batch holding their claims is in
// flight (sent, waiting on a lock) are told the truth: a claim that returned
// nil is Claimed and committed, so a second claim of it (a retry, another
// worker) is InFlight, never Claimed again while the first holds it; one
// that returned an error was not applied, so a retry is a first attempt.
// The batch's other claims are granted. With a poisoned row in the batch,
// its transaction rolls back and its ops run again alone: the cancelled
// callers' then end with their contexts' errors, unapplied.
func TestCallersCancelledWhileTheirBatchIsInFlight(t *testing.T) {
	for _, poisoned := range []bool{false, true} {
		t.Run(fmt.Sprintf("poisoned=%v", poisoned), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := migrated(t, pgtest.Start(t))
			poison(t, pool)
			s := openForTest(t, pool, WithLanes(1))
			other := openForTest(t, pool, WithBatch(1))
			unlock := lockTable(t, pool)
			var wg sync.WaitGroup
			wg.Go(func() { s.Claim(ctx, "leader", storetest.Call, time.Minute) })
			leaderBlocked(t, s)
			// The cancelled callers' ids sort first, so that their claims
			// run first in the batch's transaction.
			ids := []string{"a-cancelled-0", "a-cancelled-1", "b-0", "b-1", "b-2"}
			if poisoned {
				ids = append(ids, "poison")
			}
			cancelled := func(i int) bool { return i < 2 }
			ctxs := make([]context.Context, len(ids))
			cancels := make([]context.CancelFunc, len(ids))
			for i := range ids {
				ctxs[i], cancels[i] = context.WithCancel(ctx)
				defer cancels[i]()
			}
			errs := make([]error, len(ids))
			claims := make([]effector.Claim, len(ids))
			for i, id := range ids {
				wg.Go(func() { claims[i], errs[i] = s.Claim(ctxs[i], id, storetest.Call, time.Minute) })
			}
			queued(t, s, len(ids))
			// Kill the leader's lone claim, blocked on the lock, so that the
			// batch queued behind it is sent and waits on the lock in turn.
			sent := s.batches()
			first := waiter(t, pool, 0)
			kill(t, pool, first)
			for deadline := time.Now().Add(10 * time.Second); s.batches() == sent || s.lanes[0].group.Queued() > 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the batch behind the killed leader was not sent")
				}
			}
			waiter(t, pool, first)
			for i := range ids {
				if cancelled(i) {
					cancels[i]()
				}
			}
			unlock()
			wg.Wait()
			for i, id := range ids {
				switch {
				case id == "poison":
					if errs[i] == nil {
						t.Errorf("the poisoned claim succeeded")
					}
				case cancelled(i) && errs[i] == nil:
					if claims[i].State != effector.Claimed {
						t.Errorf("cancelled claim %s: %s, want claimed or an error", id, claims[i].State)
					}
					if c, err := other.Claim(ctx, id, storetest.Call, time.Minute); err != nil || c.State != effector.InFlight {
						t.Errorf("claim of %s after its cancelled caller was told Claimed: %+v, %v; want InFlight", id, c, err)
					}
				case cancelled(i):
					if poisoned && !errors.Is(errs[i], context.Canceled) {
						t.Errorf("cancelled claim %s in a poisoned batch returned %v, want its context's error", id, errs[i])
					}
					if c, err := other.Claim(ctx, id, storetest.Call, time.Minute); err != nil || c.State != effector.Claimed || c.Attempts != 1 || c.Reclaimed {
						t.Errorf("claim of %s after its cancelled caller's error: %+v, %v; want a first attempt, Claimed", id, c, err)
					}
				case errs[i] != nil || claims[i].State != effector.Claimed:
					t.Errorf("claim %s beside the cancelled ones: %+v, %v; want Claimed", id, claims[i], errs[i])
				}
			}
		})
	}
}
