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

// An owner's lease ran out, and its late completion waits in one batch with
// the claim of the worker taking the intent over, in either order: the new
// owner is Claimed (Reclaimed, attempt 2), the late completion is refused
// with ErrNotOwner alone, and the row is the new owner's claim, which it
// then completes.
func TestALateCompletionAndTheTakeoverInOneBatch(t *testing.T) {
	for _, completeFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("completeFirst=%v", completeFirst), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := migrated(t, pgtest.Start(t))
			s := openForTest(t, pool, WithLanes(1))
			other := openForTest(t, pool, WithBatch(1))
			old, err := s.Claim(ctx, "x", storetest.Call, time.Millisecond)
			if err != nil || old.State != effector.Claimed {
				t.Fatalf("first claim: %+v, %v", old, err)
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
				var lapsed bool
				if err := pool.QueryRow(ctx, `SELECT expires_at <= clock_timestamp() FROM toolreg_effector_dedup WHERE intent_id = 'x'::bytea`).Scan(&lapsed); err != nil {
					t.Fatal(err)
				}
				if lapsed {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the first lease did not run out")
				}
			}
			unlock := lockTable(t, pool)
			var wg sync.WaitGroup
			wg.Go(func() { s.Claim(ctx, "leader", storetest.Call, time.Minute) })
			leaderBlocked(t, s)
			var lateErr, claimErr error
			var takeover effector.Claim
			late := func() { wg.Go(func() { lateErr = s.Complete(ctx, "x", old.Token, []byte("late"), time.Minute) }) }
			claim := func() { wg.Go(func() { takeover, claimErr = s.Claim(ctx, "x", storetest.Call, time.Minute) }) }
			first, second := claim, late
			if completeFirst {
				first, second = late, claim
			}
			first()
			queued(t, s, 1)
			second()
			queued(t, s, 2)
			sent := s.batches()
			unlock()
			wg.Wait()
			if got := s.batches() - sent; got != 2 {
				t.Errorf("the leader's claim and the two calls took %d batches, want 2", got)
			}
			if !errors.Is(lateErr, effector.ErrNotOwner) {
				t.Errorf("the late completion returned %v, want ErrNotOwner", lateErr)
			}
			if claimErr != nil || takeover.State != effector.Claimed || !takeover.Reclaimed || takeover.Attempts != 2 {
				t.Fatalf("the takeover claim: %+v, %v; want claimed, reclaimed, attempt 2", takeover, claimErr)
			}
			storetest.WantState(t, other, "x", effector.InFlight)
			if err := s.Complete(ctx, "x", takeover.Token, []byte("new"), time.Minute); err != nil {
				t.Fatalf("the new owner's completion: %v", err)
			}
		})
	}
}
