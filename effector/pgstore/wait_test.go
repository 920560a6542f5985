package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

// waitMarked waits until a worker has marked id as waited on.
func waitMarked(t *testing.T, pool *pgxpool.Pool, id string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var marked bool
		if err := pool.QueryRow(context.Background(), `SELECT waiters FROM toolreg_effector_dedup WHERE intent_id = $1`, []byte(id)).Scan(&marked); err != nil {
			t.Fatal(err)
		}
		if marked {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no worker marked %q as waited on within 10s", id)
		}
	}
}

// TestWaitInFlightWakesWhenTheOwnerFinishes: a waiter with a 30s fallback
// returns within moments of the owner's Complete or Release: the
// notification wakes it, not its poll.
func TestWaitInFlightWakesWhenTheOwnerFinishes(t *testing.T) {
	t.Parallel()
	pool := migrated(t, pgtest.Start(t))
	owner := openForTest(t, pool)
	waiter := openForTest(t, pool) // another process's store
	for name, finish := range map[string]func(id, tok string) error{
		"complete": func(id, tok string) error {
			return owner.Complete(context.Background(), id, tok, []byte("r"), time.Hour)
		},
		"release": func(id, tok string) error { return owner.Release(context.Background(), id, tok) },
	} {
		t.Run(name, func(t *testing.T) {
			id := "wait-" + name
			tok := storetest.MustClaim(t, owner, id, time.Minute)
			returned := make(chan time.Time, 1)
			go func() {
				waiter.WaitInFlight(context.Background(), id, 30*time.Second)
				returned <- time.Now()
			}()
			waitMarked(t, pool, id)
			select {
			case <-returned:
				t.Fatal("WaitInFlight returned while the owner still held the claim")
			case <-time.After(100 * time.Millisecond):
			}
			finished := time.Now()
			if err := finish(id, tok); err != nil {
				t.Fatal(err)
			}
			select {
			case at := <-returned:
				t.Logf("woken %v after the owner's %s", at.Sub(finished), name)
			case <-time.After(5 * time.Second):
				t.Fatalf("WaitInFlight still waits 5s after the owner's %s, want the notification to wake it", name)
			}
		})
	}
}

func TestWaitInFlightReturnsAtOnceWhenNothingIsInFlight(t *testing.T) {
	t.Parallel()
	pool := migrated(t, pgtest.Start(t))
	s := openForTest(t, pool)
	tok := storetest.MustClaim(t, s, "done", time.Minute)
	if err := s.Complete(context.Background(), "done", tok, nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"done", "never-claimed"} {
		start := time.Now()
		s.WaitInFlight(context.Background(), id, 30*time.Second)
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("WaitInFlight on %q took %v, want it to return at once: nothing is in flight", id, d)
		}
	}
}

// TestWaitInFlightFallsBackToItsInterval: an owner that never finishes
// sends nothing; the wait ends at max.
func TestWaitInFlightFallsBackToItsInterval(t *testing.T) {
	t.Parallel()
	pool := migrated(t, pgtest.Start(t))
	s := openForTest(t, pool)
	storetest.MustClaim(t, s, "stuck", time.Minute)
	start := time.Now()
	s.WaitInFlight(context.Background(), "stuck", 300*time.Millisecond)
	if d := time.Since(start); d < 300*time.Millisecond || d > 10*time.Second {
		t.Fatalf("WaitInFlight on a claim nobody finishes took %v, want its 300ms fallback", d)
	}
}

// TestCompleteWithoutWaitersNotifiesNothing: a notifying transaction takes
// a database-wide lock through its commit, so Complete must notify only a
// claim someone waits on.
func TestCompleteWithoutWaitersNotifiesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := pgtest.Start(t)
	pool, url := srv.NewDatabase(t)
	if err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		t.Fatal(err)
	}
	s := openForTest(t, pool)
	tok := storetest.MustClaim(t, s, "quiet", time.Minute)
	if err := s.Complete(ctx, "quiet", tok, nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if n, err := conn.WaitForNotification(wctx); err == nil {
		t.Fatalf("a Complete nobody waited on notified %q, want no notification", n.Payload)
	}
}

// TestProcessIsWokenByTheOwnersComplete: the effector, told to back off 20s
// between claims, serves a duplicate of an intent in flight within moments
// of the owner's Complete, and the tool ran once.
func TestProcessIsWokenByTheOwnersComplete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, pgtest.Start(t))
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	hold := func(context.Context) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return nil
	}
	owner, calls := effectortest.EffectorWithHooks(t, openForTest(t, pool), []func(context.Context) error{hold})
	waiter, _ := effectortest.Effector(t, openForTest(t, pool), effector.WithBackoff(20*time.Second, 20*time.Second))
	in := effectortest.Intent("wake", 1, 0)

	ownerDone := make(chan error, 1)
	go func() { _, err := owner.Process(ctx, in); ownerDone <- err }()
	<-entered
	type outcome struct {
		res intent.Result
		err error
		at  time.Time
	}
	waited := make(chan outcome, 1)
	go func() {
		res, err := waiter.Process(ctx, in)
		waited <- outcome{res, err, time.Now()}
	}()
	waitMarked(t, pool, in.ID)
	finished := time.Now()
	close(release)
	if err := <-ownerDone; err != nil {
		t.Fatalf("the owner's Process: %v", err)
	}
	select {
	case o := <-waited:
		if o.err != nil || o.res.Status != intent.StatusOK {
			t.Fatalf("the duplicate's Process = %s, %v; want the owner's OK result", o.res.Status, o.err)
		}
		t.Logf("the duplicate was served %v after the owner finished", o.at.Sub(finished))
	case <-time.After(10 * time.Second):
		t.Fatal("the duplicate still waits 10s after the owner completed, want the notification to wake it before its 20s backoff")
	}
	if n := calls.Total(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
}
