package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

// Adversarial tests of a batch sent as one statement per kind: ops of one
// batch that touch the same id, and a backend killed while its batch runs.

// Several claims of one id, for the same call, wait in one batch (a
// duplicate delivery to several workers): exactly one is Claimed, the
// others see its live claim (InFlight), and none fails; the batch's other
// claims are granted.
func TestBatchDuplicateClaimsOfOneID(t *testing.T) {
	t.Parallel()
	pool := migrated(t, pgtest.Start(t))
	s := openForTest(t, pool, WithLanes(1))
	unlock := lockTable(t, pool)
	var wg sync.WaitGroup
	wg.Go(func() { storetest.MustClaim(t, s, "leader", time.Minute) })
	leaderBlocked(t, s)
	const dups = 5
	ids := []string{"x", "dup", "y", "dup", "dup", "z", "dup", "dup"}
	claims := make([]effector.Claim, len(ids))
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Go(func() { claims[i], errs[i] = s.Claim(context.Background(), id, storetest.Call, time.Minute) })
	}
	queued(t, s, len(ids))
	unlock()
	wg.Wait()
	won := 0
	for i, id := range ids {
		if errs[i] != nil {
			t.Errorf("claim %d of %s: %v", i, id, errs[i])
			continue
		}
		switch {
		case id != "dup" && claims[i].State != effector.Claimed:
			t.Errorf("claim of %s = %+v, want Claimed", id, claims[i])
		case id == "dup" && claims[i].State == effector.Claimed:
			won++
		case id == "dup" && claims[i].State != effector.InFlight:
			t.Errorf("a losing claim of dup = %+v, want InFlight", claims[i])
		}
	}
	if won != 1 {
		t.Errorf("%d of %d claims of one id were Claimed, want 1", won, dups)
	}
}

// Completions of one id wait in one batch: the owner's, a copy of it with
// the same token (the worker's retry), and a stale owner's. Exactly one
// succeeds, the owner's or its copy; the others are refused with
// ErrNotOwner alone; the stored result is the owner's.
func TestBatchDuplicateCompletesOfOneID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, pgtest.Start(t))
	s := openForTest(t, pool, WithLanes(1))
	tok := storetest.MustClaim(t, s, "dup", time.Minute)
	other := storetest.MustClaim(t, s, "other", time.Minute)
	leader := storetest.MustClaim(t, s, "leader", time.Minute)
	unlock := lockTable(t, pool)
	var wg sync.WaitGroup
	wg.Go(func() { s.Complete(ctx, "leader", leader, []byte("r"), time.Hour) })
	leaderBlocked(t, s)
	tokens := []string{tok, tok + "-stale", tok, tok + "-stale"}
	errs := make([]error, len(tokens))
	for i, token := range tokens {
		wg.Go(func() { errs[i] = s.Complete(ctx, "dup", token, []byte("owner's"), time.Hour) })
	}
	var errOther error
	wg.Go(func() { errOther = s.Complete(ctx, "other", other, []byte("other's"), time.Hour) })
	queued(t, s, len(tokens)+1)
	unlock()
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil && tokens[i] == tok:
			ok++
		case err == nil:
			t.Errorf("completion %d with a stale token succeeded", i)
		case !errors.Is(err, effector.ErrNotOwner):
			t.Errorf("completion %d: %v, want nil or ErrNotOwner", i, err)
		}
	}
	if ok != 1 {
		t.Errorf("%d completions of one claim succeeded, want 1", ok)
	}
	if errOther != nil {
		t.Errorf("the other completion of the batch: %v", errOther)
	}
	if got := storetest.WantState(t, s, "dup", effector.Done).Result; string(got) != "owner's" {
		t.Errorf("dup holds %q", got)
	}
	storetest.WantState(t, s, "other", effector.Done)
}

// A claim and the completion of the same id's claim wait in one batch: the
// completion commits (the claim it completes is its own), and the claim,
// whichever ran first, is InFlight or Done, never Claimed.
func TestBatchClaimAndCompleteOfOneID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, pgtest.Start(t))
	s := openForTest(t, pool, WithLanes(1))
	tok := storetest.MustClaim(t, s, "a", time.Minute)
	leader := storetest.MustClaim(t, s, "leader", time.Minute)
	unlock := lockTable(t, pool)
	var wg sync.WaitGroup
	wg.Go(func() { s.Complete(ctx, "leader", leader, []byte("r"), time.Hour) })
	leaderBlocked(t, s)
	var errComplete, errClaim error
	var c effector.Claim
	wg.Go(func() { errComplete = s.Complete(ctx, "a", tok, []byte("done"), time.Hour) })
	wg.Go(func() { c, errClaim = s.Claim(ctx, "a", storetest.Call, time.Minute) })
	queued(t, s, 2)
	unlock()
	wg.Wait()
	if errComplete != nil {
		t.Errorf("the owner's completion: %v", errComplete)
	}
	if errClaim != nil || (c.State != effector.InFlight && c.State != effector.Done) {
		t.Errorf("the duplicate claim = %+v, %v; want InFlight or Done", c, errClaim)
	}
	storetest.WantState(t, s, "a", effector.Done)
}

// The backend running a batch is killed (pg_terminate_backend) while the
// batch waits on a lock: every caller is told the truth, an op that
// returned nil is committed and one that returned an error was not applied
// (the killed transaction never committed; the store may run the ops again
// on their own), and the store goes on working on its other connections.
func TestBatchBackendKilledMidBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, pgtest.Start(t))
	s := openForTest(t, pool, WithLanes(1))
	tok := storetest.MustClaim(t, s, "c", time.Minute)
	leader := storetest.MustClaim(t, s, "leader", time.Minute)
	unlock := lockTable(t, pool)
	var wg sync.WaitGroup
	wg.Go(func() { s.Complete(ctx, "leader", leader, []byte("r"), time.Hour) })
	leaderBlocked(t, s)
	const n = 6
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.Claim(ctx, fmt.Sprintf("k-%d", i), storetest.Call, time.Minute)
		})
	}
	var errC error
	wg.Go(func() { errC = s.Complete(ctx, "c", tok, []byte("x"), time.Hour) })
	queued(t, s, n+1)
	// Kill the leader's lone completion, blocked on the lock, so that the
	// batch of n+1 queued behind it is sent; then kill that batch's backend
	// while it waits on the lock in turn.
	sent := s.batches()
	first := waiter(t, pool, 0)
	kill(t, pool, first)
	for deadline := time.Now().Add(10 * time.Second); s.batches() == sent || s.lanes[0].group.Queued() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the batch behind the killed leader was not sent")
		}
	}
	kill(t, pool, waiter(t, pool, first))
	unlock()
	wg.Wait()
	for i, err := range errs {
		id := fmt.Sprintf("k-%d", i)
		if err == nil {
			storetest.WantState(t, s, id, effector.InFlight)
			continue
		}
		var exists bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM toolreg_effector_dedup WHERE intent_id = $1)`, []byte(id)).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if exists {
			t.Errorf("claim of %s failed (%v), but its row was written", id, err)
		}
	}
	if errC == nil {
		storetest.WantState(t, s, "c", effector.Done)
	} else {
		storetest.WantState(t, s, "c", effector.InFlight)
	}
	// The store works on.
	tok2 := storetest.MustClaim(t, s, "after", time.Minute)
	if err := s.Complete(ctx, "after", tok2, []byte("y"), time.Hour); err != nil {
		t.Fatal(err)
	}
}

// waiter returns the pid of the one backend waiting on a lock in pool's
// database, other than not, once there is one.
func waiter(t *testing.T, pool *pgxpool.Pool, not int) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no backend waited on the lock")
		}
		var pid int
		err := pool.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND datname = current_database() AND pid <> $1`, not).Scan(&pid)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
}

func kill(t *testing.T, pool *pgxpool.Pool, pid int) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
}
