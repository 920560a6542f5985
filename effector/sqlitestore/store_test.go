package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
)

func openForTest(t testing.TB, path string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the shared suite. Its files live on tmpfs where there
// is one (same code, same pragmas, but an fsync costs nothing): the suite's
// 40ms leases and result lifetimes are checked right after commits, and on a
// loaded disk one fsync can take longer than that, which would test the disk,
// not the store. Durability has its own tests below, on the real disk. It is
// not parallel with this package's fsync-heavy tests for the same reason.
func TestConformance(t *testing.T) {
	storetest.RunWithClock(t, func(t *testing.T, now func() time.Time) effector.DedupStore {
		return openForTest(t, filepath.Join(fastTempDir(t), "dedup.db"), WithClock(now))
	})
}

// fastTempDir is a temporary directory on tmpfs (/dev/shm) if the machine has
// one, else t.TempDir().
func fastTempDir(t *testing.T) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "sqlitestore-test-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func countRows(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM effector_dedup`).Scan(&n); err != nil {
		t.Fatalf("counting rows: %v", err)
	}
	return n
}

func TestTwoHandlesOnOneFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	a := openForTest(t, path)
	b := openForTest(t, path)

	t.Run("a claim through one handle is in flight through the other", func(t *testing.T) {
		tok := storetest.MustClaim(t, a, "handoff", time.Minute)
		storetest.WantState(t, b, "handoff", effector.InFlight)
		if err := b.Complete(context.Background(), "handoff", tok, []byte("from a's claim"), time.Minute); err != nil {
			t.Fatalf("Complete through the other handle with the owner's token: %v", err)
		}
		if got := storetest.WantState(t, a, "handoff", effector.Done).Result; string(got) != "from a's claim" {
			t.Fatalf("result = %q, want %q", got, "from a's claim")
		}
	})

	t.Run("concurrent claims through both handles give exactly one owner per intent", func(t *testing.T) {
		storetest.ClaimContended(t, 20, 4, a, b)
	})
}

func TestDurability(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "durable.db")
	s := openForTest(t, path)

	t.Run("the connection runs WAL with synchronous FULL, a busy timeout and immediate transactions", func(t *testing.T) {
		for _, p := range []struct{ pragma, want string }{
			{"journal_mode", "wal"},
			{"synchronous", "2"}, // FULL
			// One try for the lock; beginWrite tries again until the
			// store's busy timeout.
			{"busy_timeout", fmt.Sprint(writeLockTry.Milliseconds())},
		} {
			var got string
			if err := s.db.QueryRow("PRAGMA " + p.pragma).Scan(&got); err != nil {
				t.Fatalf("PRAGMA %s: %v", p.pragma, err)
			}
			if got != p.want {
				t.Errorf("PRAGMA %s = %q, want %q", p.pragma, got, p.want)
			}
		}
		if s.busyTimeout != 10*time.Second {
			t.Errorf("busy timeout %v, want the default 10s", s.busyTimeout)
		}
	})

	t.Run("a result survives closing and reopening the file", func(t *testing.T) {
		tok := storetest.MustClaim(t, s, "survivor", time.Minute)
		if err := s.Complete(context.Background(), "survivor", tok, []byte("kept"), time.Hour); err != nil {
			t.Fatal(err)
		}
		inflight := storetest.MustClaim(t, s, "in-flight-survivor", time.Hour)
		reopened := openForTest(t, path)
		if got := storetest.WantState(t, reopened, "survivor", effector.Done).Result; string(got) != "kept" {
			t.Fatalf("result after reopening = %q, want %q", got, "kept")
		}
		storetest.WantState(t, reopened, "in-flight-survivor", effector.InFlight)
		if err := reopened.Complete(context.Background(), "in-flight-survivor", inflight, []byte("late"), time.Hour); err != nil {
			t.Fatalf("the owner completing through a reopened file: %v", err)
		}
	})
}

// TestBusyTimeout holds the file's write lock from a raw connection, as another
// process would, and checks that writes queue behind it rather than failing
// or, worse, claiming without the lock.
func TestBusyTimeout(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "busy.db")
	s := openForTest(t, path, WithBusyTimeout(5*time.Second))
	impatient := openForTest(t, path, WithBusyTimeout(50*time.Millisecond))

	other, err := sql.Open("sqlite", dsn(path, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.Begin() // BEGIN IMMEDIATE: holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO effector_dedup (intent_id, token, done, result, expires_at) VALUES ('held', 'other', 0, NULL, ?)`,
		time.Now().Add(time.Hour).UnixNano()); err != nil {
		t.Fatal(err)
	}

	t.Run("a claim with a short busy timeout fails instead of claiming", func(t *testing.T) {
		_, err := impatient.Claim(context.Background(), "held", effector.Call{}, time.Minute)
		if err == nil || !strings.Contains(err.Error(), "locked") || !strings.Contains(err.Error(), "raise WithBusyTimeout") {
			t.Fatalf("Claim while another connection writes: err = %v, want a database-locked error that says to raise WithBusyTimeout", err)
		}
	})

	t.Run("a claim waits for the lock and sees the other writer's row", func(t *testing.T) {
		done := make(chan effector.Claim)
		go func() {
			c, err := s.Claim(context.Background(), "held", effector.Call{}, time.Minute)
			if err != nil {
				t.Errorf("Claim: %v", err)
			}
			done <- c
		}()
		for !s.group.Leading() { // its batch has begun: BEGIN IMMEDIATE waits for the lock
			time.Sleep(time.Millisecond)
		}
		// The claim has begun while the other connection holds the lock: it
		// must still be waiting after a while, and return only after the commit.
		time.Sleep(200 * time.Millisecond)
		select {
		case c := <-done:
			t.Fatalf("Claim returned %s while another connection held the write lock: it did not wait for the lock", c.State)
		default:
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if c := <-done; c.State != effector.InFlight {
			t.Fatalf("Claim after the other writer committed its claim = %s, want in-flight", c.State)
		}
	})
}

func TestSweep(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}

	t.Run("Sweep deletes expired results, keeps live rows, and keeps a lapsed claim for a day", func(t *testing.T) {
		clock := &fakeClock{t: clock.Now()}
		s := openForTest(t, filepath.Join(t.TempDir(), "sweep.db"), WithClock(clock.Now), WithSweepInterval(0))
		storetest.MustClaim(t, s, "short-lease", time.Second)
		storetest.MustClaim(t, s, "long-lease", 48*time.Hour)
		tok := storetest.MustClaim(t, s, "short-result", time.Hour)
		if err := s.Complete(context.Background(), "short-result", tok, []byte("r"), time.Second); err != nil {
			t.Fatal(err)
		}
		tok = storetest.MustClaim(t, s, "long-result", time.Hour)
		if err := s.Complete(context.Background(), "long-result", tok, []byte("r"), 48*time.Hour); err != nil {
			t.Fatal(err)
		}
		clock.Advance(2 * time.Second)
		n, err := s.Sweep(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 || countRows(t, s) != 3 {
			t.Fatalf("Sweep deleted %d rows leaving %d, want the expired result deleted and 3 left", n, countRows(t, s))
		}
		storetest.WantState(t, s, "long-lease", effector.InFlight)
		storetest.WantState(t, s, "long-result", effector.Done)

		// A day after its lease ran out, the lapsed claim goes too.
		clock.Advance(24 * time.Hour)
		if n, err := s.Sweep(context.Background()); err != nil || n != 1 || countRows(t, s) != 2 {
			t.Fatalf("Sweep a day later deleted %d rows (%v) leaving %d, want the lapsed claim deleted and 2 left", n, err, countRows(t, s))
		}
	})

	t.Run("a swept store still says a lapsed claim is reclaimed", func(t *testing.T) {
		s := openForTest(t, filepath.Join(t.TempDir(), "reclaim.db"), WithClock(clock.Now), WithSweepInterval(time.Minute))
		storetest.MustClaim(t, s, "crashed", time.Second) // its owner crashes
		clock.Advance(2 * time.Minute)
		storetest.MustClaim(t, s, "other", time.Minute) // a write once the interval has passed sweeps
		if _, err := s.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		c, err := s.Claim(context.Background(), "crashed", storetest.Call, time.Minute)
		if err != nil || c.State != effector.Claimed || !c.Reclaimed {
			t.Fatalf("Claim after sweeps = %+v, %v; want Claimed and Reclaimed: the crashed owner may have run the tool", c, err)
		}
	})

	t.Run("claims sweep expired rows once the interval has passed", func(t *testing.T) {
		s := openForTest(t, filepath.Join(t.TempDir(), "autosweep.db"), WithClock(clock.Now),
			WithSweepInterval(time.Minute), WithSweepBatch(3))
		for i := range 5 {
			id := fmt.Sprintf("old-%d", i)
			tok := storetest.MustClaim(t, s, id, time.Hour)
			if err := s.Complete(context.Background(), id, tok, []byte("r"), time.Second); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(30 * time.Second)
		storetest.MustClaim(t, s, "before-interval", time.Hour)
		if got := countRows(t, s); got != 6 {
			t.Fatalf("rows before the sweep interval = %d, want 6 (nothing swept yet)", got)
		}
		clock.Advance(31 * time.Second)
		storetest.MustClaim(t, s, "after-interval", time.Hour)
		if got := countRows(t, s); got != 4 {
			t.Fatalf("rows after one sweep of batch 3 = %d, want 4", got)
		}
	})
}

func TestInjectedTokens(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	s := openForTest(t, filepath.Join(t.TempDir(), "tokens.db"), WithTokens(func() (string, error) {
		return fmt.Sprintf("tok-%d", n.Add(1)), nil
	}))
	if got := storetest.MustClaim(t, s, "a", time.Minute); got != "tok-1" {
		t.Fatalf("token = %q, want the injected %q", got, "tok-1")
	}
	broken := openForTest(t, filepath.Join(t.TempDir(), "broken.db"), WithTokens(func() (string, error) {
		return "", errors.New("entropy ran out")
	}))
	if _, err := broken.Claim(context.Background(), "a", effector.Call{}, time.Minute); err == nil || !strings.Contains(err.Error(), "entropy ran out") {
		t.Fatalf("Claim with a failing token source: err = %v, want it passed on", err)
	}
}

func TestRefusesBadInput(t *testing.T) {
	t.Parallel()
	s := openForTest(t, filepath.Join(t.TempDir(), "bad.db"))
	ctx := context.Background()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"a zero lease is refused", func() error { _, err := s.Claim(ctx, "x", effector.Call{}, 0); return err }(), "lease 0s: want a positive duration"},
		{"a negative ttl is refused", s.Complete(ctx, "x", "t", nil, -time.Second), "result ttl -1s: want a positive duration"},
		{"a path with a query is refused", func() error { _, err := Open(ctx, "x.db?mode=memory"); return err }(), `path "x.db?mode=memory"`},
		{"an empty path is refused", func() error { _, err := Open(ctx, ""); return err }(), `path ""`},
		{"an unopenable file is reported with its path", func() error {
			_, err := Open(ctx, filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"))
			return err
		}(), "no/such/dir/x.db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", tt.err, tt.want)
			}
		})
	}
}

func TestEmptyResultIsDoneNotNull(t *testing.T) {
	t.Parallel()
	s := openForTest(t, filepath.Join(t.TempDir(), "empty.db"))
	tok := storetest.MustClaim(t, s, "empty", time.Minute)
	if err := s.Complete(context.Background(), "empty", tok, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	c := storetest.WantState(t, s, "empty", effector.Done)
	if c.Result == nil || len(c.Result) != 0 {
		t.Fatalf("result = %#v, want an empty, non-nil slice", c.Result)
	}
}

// A claim that finds its intent done or in flight writes nothing: a batch of
// redeliveries adds no frame to the WAL, so it costs no fsync.
func TestRedeliveredClaimsWriteNothing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "dedup.db")
	s := openForTest(t, path, WithSweepInterval(0))
	call := effector.Call{Tool: "refund"}
	done, err := s.Claim(ctx, "done-1", call, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, "done-1", done.Token, []byte(`{"ok":true}`), time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "flight-1", call, time.Minute); err != nil {
		t.Fatal(err)
	}
	walSize := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := walSize()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			id, want := "done-1", effector.Done
			if i%2 == 1 {
				id, want = "flight-1", effector.InFlight
			}
			c, err := s.Claim(ctx, id, call, time.Minute)
			if err != nil || c.State != want {
				t.Errorf("Claim(%s) = %v, %v; want %v", id, c.State, err, want)
			}
		})
	}
	wg.Wait()
	if after := walSize(); after != before {
		t.Fatalf("16 redelivered claims grew the WAL from %d to %d bytes: they wrote", before, after)
	}
	if _, err := s.Claim(ctx, "fresh-1", call, time.Minute); err != nil {
		t.Fatal(err)
	}
	if walSize() == before {
		t.Fatal("a fresh claim did not grow the WAL: the size is not a measure of writes here")
	}
}
