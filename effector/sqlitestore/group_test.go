package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
)

// TestConformanceBatched runs the shared suite with a batch delay long
// enough that its concurrent claims and completions land in shared
// transactions.
func TestConformanceBatched(t *testing.T) {
	storetest.RunWithClock(t, func(t *testing.T, now func() time.Time) effector.DedupStore {
		return openForTest(t, filepath.Join(fastTempDir(t), "dedup.db"), WithClock(now), WithBatch(DefaultBatchSize, 2*time.Millisecond))
	})
}

// holdWriteLock takes path's write lock from a connection of its own, as
// another process would, and returns what gives it back.
func holdWriteLock(t *testing.T, path string) func() {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	tx, err := db.Begin() // BEGIN IMMEDIATE
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		tx.Rollback()
		db.Close()
	}
}

// queued waits until n ops wait in s's queue behind a leader.
func queued(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := s.group.Queued()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ops queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitLeaderBlocked waits until a leader has taken its batch (the queue is
// empty) and is committing it, blocked on a held write lock.
func waitLeaderBlocked(t *testing.T, s *Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !s.group.Leading() || s.group.Queued() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("no leader took its batch")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond) // past any linger, into BEGIN IMMEDIATE
}

// One claim of a batch fails in SQLite itself (a trigger refuses its row):
// it alone fails, with its own error, and every other claim of the same
// transaction is committed, which another handle on the file sees as soon as
// each Claim has returned.
func TestBatchOneFailingClaimFailsAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dedup.db")
	s := openForTest(t, path)
	if _, err := s.db.Exec(`CREATE TRIGGER poison BEFORE INSERT ON effector_dedup
		WHEN NEW.intent_id = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned row'); END`); err != nil {
		t.Fatal(err)
	}
	other := openForTest(t, path)
	release := holdWriteLock(t, path)

	const n = 24
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("ok-%d", i)
	}
	ids[n/2] = "poison"
	errs := make([]error, n)
	claims := make([]effector.Claim, n)
	var wg sync.WaitGroup
	wg.Go(func() { storetest.MustClaim(t, s, "leader", time.Minute) })
	waitLeaderBlocked(t, s)
	for i, id := range ids {
		wg.Go(func() {
			claims[i], errs[i] = s.Claim(context.Background(), id, storetest.Call, time.Minute)
			if errs[i] == nil {
				// Returned: committed, so another handle sees it.
				storetest.WantState(t, other, id, effector.InFlight)
			}
		})
	}
	queued(t, s, n) // all wait for the leader, blocked on the lock
	release()
	wg.Wait()
	if got := s.group.Batches.Load(); got != 1 {
		t.Errorf("%d claims took %d transactions, want 1 (the leader's, which takes the ops queued while it waited for the lock)", n, got)
	}
	for i, id := range ids {
		switch {
		case id == "poison":
			if errs[i] == nil || !strings.Contains(errs[i].Error(), "poisoned row") || !strings.Contains(errs[i].Error(), `"poison"`) {
				t.Errorf("the poisoned claim returned %v, want its own error", errs[i])
			}
		case errs[i] != nil:
			t.Errorf("claim %s failed with its batch's poisoned claim: %v", id, errs[i])
		case claims[i].State != effector.Claimed:
			t.Errorf("claim %s: %s, want claimed", id, claims[i].State)
		}
	}
}

// A release writes twice (it ends the lease, then deletes the row); when its
// second write fails inside a batch, its first is undone with it, and the
// owner still holds the claim, while the batch's other ops commit.
func TestBatchFailingReleaseUndoesItsOwnWritesOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dedup.db")
	s := openForTest(t, path)
	ctx := context.Background()
	stuck := storetest.MustClaim(t, s, "stuck", time.Minute)
	if _, err := s.db.Exec(`CREATE TRIGGER nodelete BEFORE DELETE ON effector_dedup
		WHEN OLD.intent_id = 'stuck' BEGIN SELECT RAISE(ABORT, 'kept row'); END`); err != nil {
		t.Fatal(err)
	}
	toks := make([]string, 8)
	for i := range toks {
		toks[i] = storetest.MustClaim(t, s, fmt.Sprintf("done-%d", i), time.Minute)
	}
	release := holdWriteLock(t, path)
	var wg sync.WaitGroup
	wg.Go(func() { storetest.MustClaim(t, s, "leader", time.Minute) })
	waitLeaderBlocked(t, s)
	var relErr error
	completeErrs := make([]error, len(toks))
	wg.Go(func() { relErr = s.Release(ctx, "stuck", stuck) })
	for i, tok := range toks {
		wg.Go(func() {
			completeErrs[i] = s.Complete(ctx, fmt.Sprintf("done-%d", i), tok, []byte("r"), time.Hour)
		})
	}
	queued(t, s, len(toks)+1) // all in the next batch
	release()
	wg.Wait()
	if relErr == nil || !strings.Contains(relErr.Error(), "kept row") {
		t.Fatalf("Release = %v, want the trigger's error", relErr)
	}
	for i, err := range completeErrs {
		if err != nil {
			t.Errorf("Complete of done-%d failed with the batch's failed release: %v", i, err)
		}
		storetest.WantState(t, s, fmt.Sprintf("done-%d", i), effector.Done)
	}
	// The release's first write was rolled back: the claim is still the owner's.
	if err := s.Complete(ctx, "stuck", stuck, []byte("r"), time.Hour); err != nil {
		t.Errorf("the owner lost its claim to a release that failed: %v", err)
	}
}

// A caller whose context ends while its op waits for a batch gets its
// context's error, and its op never runs.
func TestBatchCallerGivesUpBeforeItsBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dedup.db")
	s := openForTest(t, path)
	release := holdWriteLock(t, path)
	var wg sync.WaitGroup
	wg.Go(func() { storetest.MustClaim(t, s, "leader", time.Minute) })
	waitLeaderBlocked(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	var err error
	wg.Go(func() { _, err = s.Claim(ctx, "quitter", storetest.Call, time.Minute) })
	queued(t, s, 1)
	cancel()
	time.Sleep(20 * time.Millisecond)
	release()
	wg.Wait()
	if err == nil || !strings.Contains(err.Error(), context.Canceled.Error()) {
		t.Fatalf("Claim = %v, want context.Canceled", err)
	}
	storetest.MustClaim(t, s, "quitter", time.Minute) // never claimed
}
