package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

// migrated is a fresh database on srv with the store's tables.
func migrated(t testing.TB, srv *pgtest.Server) *pgxpool.Pool {
	t.Helper()
	pool, _ := srv.NewDatabase(t)
	if err := Migrate(context.Background(), pool); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return pool
}

func openForTest(t testing.TB, pool *pgxpool.Pool, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), pool, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	pool := migrated(t, pgtest.Start(t))
	// One database for the whole suite: every subtest uses ids of its own.
	storetest.Run(t, func(t *testing.T) effector.DedupStore {
		return openForTest(t, pool)
	})
}

var call = storetest.Call

// TestStaleOwnerWithTheSameRandomTokenIsFenced: tokens come from a generator
// that repeats (a bad RNG, a cloned VM). The first owner's lease lapses, the
// second claims with the same random part, and the first must still be
// unable to complete or release: the fencing number tells them apart.
func TestStaleOwnerWithTheSameRandomTokenIsFenced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, pgtest.Start(t))
	same := func() (string, error) { return "always-the-same", nil }
	a := openForTest(t, pool, WithTokens(same))
	b := openForTest(t, pool, WithTokens(same))

	first := storetest.MustClaim(t, a, "i", 50*time.Millisecond)
	waitLapsed(t, pool, "i")
	c, err := b.Claim(ctx, "i", call, time.Minute)
	if err != nil || c.State != effector.Claimed || !c.Reclaimed || c.Attempts != 2 {
		t.Fatalf("the second owner's claim = %+v, %v; want Claimed, Reclaimed, attempt 2", c, err)
	}
	if c.Token == first {
		t.Fatalf("two claims got the same token %q from a repeating generator, want distinct fencing numbers", first)
	}
	if !strings.HasPrefix(first, "always-the-same:") || !strings.HasPrefix(c.Token, "always-the-same:") {
		t.Fatalf("tokens %q and %q: want the generator's value, a colon and a fencing number", first, c.Token)
	}
	if fence(t, first) >= fence(t, c.Token) {
		t.Fatalf("fencing numbers %q then %q: want them rising", first, c.Token)
	}
	if err := a.Complete(ctx, "i", first, []byte("stale"), time.Hour); !errors.Is(err, effector.ErrNotOwner) {
		t.Fatalf("Complete by the stale owner: %v, want ErrNotOwner", err)
	}
	if err := a.Release(ctx, "i", first); !errors.Is(err, effector.ErrNotOwner) {
		t.Fatalf("Release by the stale owner: %v, want ErrNotOwner", err)
	}
	storetest.WantState(t, a, "i", effector.InFlight)
	if err := b.Complete(ctx, "i", c.Token, []byte("current"), time.Hour); err != nil {
		t.Fatalf("Complete by the current owner: %v", err)
	}
	if got := storetest.WantState(t, a, "i", effector.Done).Result; string(got) != "current" {
		t.Fatalf("result = %q, want the current owner's", got)
	}
}

func fence(t *testing.T, token string) int64 {
	t.Helper()
	_, num, ok := strings.Cut(token, ":")
	n, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil {
		t.Fatalf("token %q has no fencing number after a colon", token)
	}
	return n
}

// waitLapsed waits until the server's clock is past id's deadline.
func waitLapsed(t *testing.T, pool *pgxpool.Pool, id string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var live bool
		if err := pool.QueryRow(context.Background(), `SELECT expires_at > clock_timestamp() FROM toolreg_effector_dedup WHERE intent_id = $1`, []byte(id)).Scan(&live); err != nil {
			t.Fatal(err)
		}
		if !live {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease of %q is still live by the server's clock after 10s", id)
		}
	}
}

// TestLeasesAreJudgedByTheServersClock moves the row's deadline on the
// server, as a server clock running ahead or behind the caller's would: the
// store must follow the server, whatever the caller's clock says.
func TestLeasesAreJudgedByTheServersClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, pgtest.Start(t))
	s := openForTest(t, pool)
	setDeadline := func(id, interval string) {
		t.Helper()
		if _, err := pool.Exec(ctx, `UPDATE toolreg_effector_dedup SET expires_at = clock_timestamp() + $2::interval WHERE intent_id = $1`, []byte(id), interval); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("the deadline is the server's clock plus the lease", func(t *testing.T) {
		storetest.MustClaim(t, s, "deadline", time.Hour)
		var left time.Duration
		if err := pool.QueryRow(ctx, `SELECT expires_at - clock_timestamp() FROM toolreg_effector_dedup WHERE intent_id = 'deadline'`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left <= 59*time.Minute || left > time.Hour {
			t.Fatalf("the server says the 1h lease has %v left, want just under 1h", left)
		}
	})

	t.Run("a lease the server says ended is over, though the caller's clock says it has an hour left", func(t *testing.T) {
		tok := storetest.MustClaim(t, s, "ahead", time.Hour)
		setDeadline("ahead", "-1 millisecond")
		if err := s.Complete(ctx, "ahead", tok, []byte("late"), time.Hour); !errors.Is(err, effector.ErrNotOwner) {
			t.Fatalf("Complete after the server's clock passed the lease: %v, want ErrNotOwner", err)
		}
		if c, err := s.Claim(ctx, "ahead", call, time.Hour); err != nil || c.State != effector.Claimed || !c.Reclaimed {
			t.Fatalf("Claim after the server's clock passed the lease = %+v, %v; want Claimed and Reclaimed", c, err)
		}
	})

	t.Run("a lease the server says is live holds, though the caller's clock says it ended", func(t *testing.T) {
		tok := storetest.MustClaim(t, s, "behind", 20*time.Millisecond)
		setDeadline("behind", "1 hour")
		time.Sleep(100 * time.Millisecond) // the caller's clock is well past the 20ms lease
		storetest.WantState(t, s, "behind", effector.InFlight)
		if err := s.Complete(ctx, "behind", tok, []byte("on time"), time.Hour); err != nil {
			t.Fatalf("Complete within the lease by the server's clock: %v", err)
		}
		if got := storetest.WantState(t, s, "behind", effector.Done).Result; string(got) != "on time" {
			t.Fatalf("result = %q", got)
		}
	})

	t.Run("a result the server says expired frees the id", func(t *testing.T) {
		tok := storetest.MustClaim(t, s, "result", time.Hour)
		if err := s.Complete(ctx, "result", tok, []byte("r"), time.Hour); err != nil {
			t.Fatal(err)
		}
		setDeadline("result", "-1 millisecond")
		if c, err := s.Claim(ctx, "result", call, time.Hour); err != nil || c.State != effector.Claimed || c.Reclaimed || c.Attempts != 1 {
			t.Fatalf("Claim after the server expired the result = %+v, %v; want Claimed, not Reclaimed, attempt 1", c, err)
		}
	})
}

// TestServerRestartMidRun crashes the server with claims in flight and
// results stored: afterwards the results are still there byte for byte, the
// claims are still held by their owners (who can complete them), and no
// intent can be claimed twice.
func TestServerRestartMidRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := pgtest.Start(t)
	pool := migrated(t, srv)
	s := openForTest(t, pool)
	done := storetest.MustClaim(t, s, "done", time.Minute)
	if err := s.Complete(ctx, "done", done, []byte("\x00stored\xff"), time.Hour); err != nil {
		t.Fatal(err)
	}
	held := storetest.MustClaim(t, s, "held", time.Minute)

	srv.Restart(t)

	// The pool's connections were cut; the first calls may fail, then the
	// pool dials again. Nothing may be claimed twice meanwhile.
	var c effector.Claim
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err = s.Claim(ctx, "held", call, time.Minute); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || c.State != effector.InFlight {
		t.Fatalf("Claim of an intent held across the crash = %+v, %v; want InFlight", c, err)
	}
	if got := storetest.WantState(t, s, "done", effector.Done).Result; string(got) != "\x00stored\xff" {
		t.Fatalf("result after the crash = %q, want it byte-identical", got)
	}
	if err := s.Complete(ctx, "held", held, []byte("after"), time.Hour); err != nil {
		t.Fatalf("Complete by the owner after the crash: %v", err)
	}
	storetest.WantState(t, s, "held", effector.Done)
}

func TestTwoPoolsOnOneDatabase(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	a, url := srv.NewDatabase(t)
	if err := Migrate(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	b, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	storetest.ClaimContended(t, 50, 4, openForTest(t, a), openForTest(t, b))
}

// TestAnyBytesInIdsToolsAndTokens: Postgres text holds neither NUL nor
// invalid UTF-8, and a DedupStore is handed any Go string: an intent id and
// a tool name with both are kept byte for byte, and a made-up token with
// them is refused as not the owner, not as a database error.
func TestAnyBytesInIdsToolsAndTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, pgtest.Start(t))
	s := openForTest(t, pool)
	waiter := openForTest(t, pool)
	id := "id\x00with\xffodd bytes"
	odd := effector.NewCall("tool\x00\xfe", []byte(`{}`))
	c, err := s.Claim(ctx, id, odd, time.Minute)
	if err != nil || c.State != effector.Claimed {
		t.Fatalf("Claim of an id with NUL and invalid UTF-8 = %+v, %v; want Claimed", c, err)
	}
	if c2, err := s.Claim(ctx, id[:2], odd, time.Minute); err != nil || c2.State != effector.Claimed {
		t.Fatalf("Claim of the id cut at its NUL = %+v, %v; want a claim of its own", c2, err)
	}
	for _, bad := range []string{"\x00", "\xff", c.Token + "\x00"} {
		if err := s.Complete(ctx, id, bad, []byte("forged"), time.Hour); !errors.Is(err, effector.ErrNotOwner) {
			t.Fatalf("Complete with token %q: %v, want ErrNotOwner", bad, err)
		}
		if err := s.Release(ctx, id, bad); !errors.Is(err, effector.ErrNotOwner) {
			t.Fatalf("Release with token %q: %v, want ErrNotOwner", bad, err)
		}
	}
	if m, err := s.Claim(ctx, id, call, time.Minute); err != nil || m.State != effector.Mismatch || m.Recorded != odd {
		t.Fatalf("Claim by another call = %+v, %v; want Mismatch recording %v byte for byte", m, err, odd)
	}
	woken := make(chan struct{})
	go func() { waiter.WaitInFlight(ctx, id, 30*time.Second); close(woken) }()
	waitMarked(t, pool, id)
	if err := s.Complete(ctx, id, c.Token, []byte("r"), time.Hour); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woken:
	case <-time.After(10 * time.Second):
		t.Fatal("a waiter on an id with odd bytes was not woken by the Complete")
	}
	if d, err := s.Claim(ctx, id, odd, time.Minute); err != nil || d.State != effector.Done || string(d.Result) != "r" {
		t.Fatalf("Claim after Complete = %+v, %v; want Done with %q", d, err, "r")
	}
	if _, err := Open(ctx, pool, WithTokens(func() (string, error) { return "nul\x00", nil })); err != nil {
		t.Fatal(err)
	}
	bad := openForTest(t, pool, WithTokens(func() (string, error) { return "nul\x00", nil }))
	if _, err := bad.Claim(ctx, "x", call, time.Minute); err == nil || !strings.Contains(err.Error(), "WithTokens") {
		t.Fatalf("Claim with a token generator that makes NUL: %v, want an error naming WithTokens", err)
	}
}

// TestConcurrentReclaimOfALapsedClaim: many workers on two pools race to
// take over intents whose leases ran out; each is taken exactly once, as
// attempt 2, Reclaimed.
func TestConcurrentReclaimOfALapsedClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := pgtest.Start(t)
	a, url := srv.NewDatabase(t)
	if err := Migrate(ctx, a); err != nil {
		t.Fatal(err)
	}
	b, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	stores := []*Store{openForTest(t, a), openForTest(t, b)}
	const intents = 20
	for i := range intents {
		storetest.MustClaim(t, stores[0], fmt.Sprintf("lapsed-%d", i), time.Hour)
	}
	if _, err := a.Exec(ctx, `UPDATE toolreg_effector_dedup SET expires_at = clock_timestamp() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	won := map[string][]effector.Claim{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range 16 {
		s := stores[w%2]
		wg.Go(func() {
			<-start
			for i := range intents {
				id := fmt.Sprintf("lapsed-%d", i)
				c, err := s.Claim(ctx, id, call, time.Hour)
				if err != nil {
					t.Errorf("Claim(%q): %v", id, err)
					return
				}
				if c.State == effector.Claimed {
					mu.Lock()
					won[id] = append(won[id], c)
					mu.Unlock()
				} else if c.State != effector.InFlight {
					t.Errorf("Claim(%q) = %s, want claimed or in-flight", id, c.State)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for i := range intents {
		id := fmt.Sprintf("lapsed-%d", i)
		if cs := won[id]; len(cs) != 1 || !cs[0].Reclaimed || cs[0].Attempts != 2 {
			t.Errorf("the takeovers of %q = %+v, want exactly one, Reclaimed, attempt 2", id, cs)
		}
	}
}
