package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

// lingering makes s's batch leaders wait a moment before sending, so that
// concurrent claims and completions pile up into shared transactions.
func lingering(s *Store) *Store {
	s.beforeBatch = func() { time.Sleep(2 * time.Millisecond) }
	return s
}

// TestConformanceBatched runs the shared suite on a store whose concurrent
// claims and completions land in shared transactions, and checks they did.
func TestConformanceBatched(t *testing.T) {
	t.Parallel()
	pool := migrated(t, pgtest.Start(t))
	var mu sync.Mutex
	var stores []*Store
	t.Run("suite", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) effector.DedupStore {
			s := lingering(openForTest(t, pool))
			mu.Lock()
			stores = append(stores, s)
			mu.Unlock()
			return s
		})
	})
	var batches, ops int64
	for _, s := range stores {
		batches += s.batches()
		ops += s.ops()
	}
	if ops <= batches {
		t.Fatalf("%d ops in %d transactions: no two ever shared one, so the suite did not test batching", ops, batches)
	}
}

// TestTwoPoolsOnOneDatabaseBatched: two stores on one database, batching
// their claims, never both claim an intent, and their batches, which lock
// rows in id order, never deadlock each other.
func TestTwoPoolsOnOneDatabaseBatched(t *testing.T) {
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
	sa, sb := lingering(openForTest(t, a)), lingering(openForTest(t, b))
	storetest.ClaimContended(t, 100, 8, sa, sb)
	if sa.ops() <= sa.batches() {
		t.Fatalf("store a: %d ops in %d transactions: nothing was batched", sa.ops(), sa.batches())
	}
}

// lockTable takes an EXCLUSIVE lock on the store's table from a connection
// of its own, as another process's long transaction would: every write
// waits, reads do not. It returns what ends it.
func lockTable(t *testing.T, pool *pgxpool.Pool) func() {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE toolreg_effector_dedup IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	return func() { tx.Rollback(ctx) }
}

// queued waits until n ops wait in s's queue behind a leader.
func queued(t *testing.T, s *Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.lanes[0].group.Queued() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d ops queued, want %d", s.lanes[0].group.Queued(), n)
		}
	}
}

// leaderBlocked waits until a leader has taken its batch and is sending it.
func leaderBlocked(t *testing.T, s *Store) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !s.lanes[0].group.Leading() || s.lanes[0].group.Queued() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no leader took its batch")
		}
	}
}

// poison makes Postgres itself refuse one row: a claim of intent "poison",
// and a completion whose result is "poison".
func poison(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `
		CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.intent_id = 'poison'::bytea OR NEW.result = 'poison'::bytea THEN
				RAISE EXCEPTION 'poisoned row';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER poison BEFORE INSERT OR UPDATE ON toolreg_effector_dedup
			FOR EACH ROW EXECUTE FUNCTION poison();`); err != nil {
		t.Fatal(err)
	}
}

// One claim of a batch fails in Postgres itself (a trigger refuses its
// row): it alone fails, with its own error, and every other claim of the
// batch is committed, which another store on the database sees as soon as
// each Claim has returned.
func TestBatchOneFailingClaimFailsAlone(t *testing.T) {
	t.Parallel()
	pool := migrated(t, pgtest.Start(t))
	poison(t, pool)
	s := openForTest(t, pool, WithLanes(1))
	other := openForTest(t, pool, WithBatch(1))
	unlock := lockTable(t, pool)

	const n = 24
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("ok-%02d", i)
	}
	ids[n/2] = "poison"
	errs := make([]error, n)
	claims := make([]effector.Claim, n)
	var wg sync.WaitGroup
	wg.Go(func() { storetest.MustClaim(t, s, "leader", time.Minute) })
	leaderBlocked(t, s)
	for i, id := range ids {
		wg.Go(func() {
			claims[i], errs[i] = s.Claim(context.Background(), id, storetest.Call, time.Minute)
			if errs[i] == nil {
				// Returned: committed, so another store sees it.
				storetest.WantState(t, other, id, effector.InFlight)
			}
		})
	}
	queued(t, s, n) // all wait behind the leader, blocked on the lock
	unlock()
	wg.Wait()
	if got := s.batches(); got != 2 {
		t.Errorf("%d claims took %d batches, want 2 (the leader's, then one of %d)", n, got, n)
	}
	for i, id := range ids {
		switch {
		case id == "poison":
			if errs[i] == nil || !strings.Contains(errs[i].Error(), "poisoned row") || !strings.Contains(errs[i].Error(), `"poison"`) {
				t.Errorf("the poisoned claim returned %v, want its own error", errs[i])
			}
		case errs[i] != nil || claims[i].State != effector.Claimed:
			t.Errorf("claim %s of the same batch = %+v, %v; want Claimed", id, claims[i], errs[i])
		}
	}
}

// One completion of a batch fails in Postgres itself: it alone fails, the
// others are committed (done, with their results, for another store) when
// their Completes return, and the failed one's claim is still its owner's.
func TestBatchOneFailingCompleteFailsAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, pgtest.Start(t))
	poison(t, pool)
	s := openForTest(t, pool, WithLanes(1))
	other := openForTest(t, pool, WithBatch(1))

	const n = 24
	ids := make([]string, n)
	tokens := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("c-%02d", i)
		tokens[i] = storetest.MustClaim(t, s, ids[i], time.Minute)
	}
	leader := storetest.MustClaim(t, s, "leader", time.Minute)
	before := s.batches()
	unlock := lockTable(t, pool)
	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.Complete(ctx, "leader", leader, []byte("r"), time.Hour); err != nil {
			t.Error(err)
		}
	})
	leaderBlocked(t, s)
	for i, id := range ids {
		wg.Go(func() {
			result := []byte("result " + id)
			if i == n/2 {
				result = []byte("poison")
			}
			errs[i] = s.Complete(ctx, id, tokens[i], result, time.Hour)
			if errs[i] == nil {
				if got := storetest.WantState(t, other, id, effector.Done).Result; string(got) != string(result) {
					t.Errorf("%s: stored %q, want %q", id, got, result)
				}
			}
		})
	}
	queued(t, s, n)
	unlock()
	wg.Wait()
	if got := s.batches() - before; got != 2 {
		t.Errorf("%d completions took %d batches, want 2", n, got)
	}
	for i, id := range ids {
		switch {
		case i == n/2:
			if errs[i] == nil || !strings.Contains(errs[i].Error(), "poisoned row") || !strings.Contains(errs[i].Error(), fmt.Sprintf("%q", id)) {
				t.Errorf("the poisoned completion returned %v, want its own error", errs[i])
			}
			storetest.WantState(t, other, id, effector.InFlight)
			if err := s.Complete(ctx, id, tokens[i], []byte("fine"), time.Hour); err != nil {
				t.Errorf("the owner's Complete after its failed one: %v", err)
			}
		case errs[i] != nil:
			t.Errorf("completion %s of the same batch: %v", id, errs[i])
		}
	}
}

// A stale owner's completion in a batch is refused (ErrNotOwner) alone: it is
// no failure of the transaction, and the batch's other completions commit
// in it.
func TestBatchStaleCompleteIsRefusedAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, pgtest.Start(t))
	s := openForTest(t, pool, WithLanes(1))
	a := storetest.MustClaim(t, s, "a", time.Minute)
	b := storetest.MustClaim(t, s, "b", time.Minute)
	leader := storetest.MustClaim(t, s, "leader", time.Minute)
	before := s.batches()
	unlock := lockTable(t, pool)
	var wg sync.WaitGroup
	var errA, errB error
	wg.Go(func() { s.Complete(ctx, "leader", leader, []byte("r"), time.Hour) })
	leaderBlocked(t, s)
	wg.Go(func() { errA = s.Complete(ctx, "a", a+"-stale", []byte("x"), time.Hour) })
	wg.Go(func() { errB = s.Complete(ctx, "b", b, []byte("y"), time.Hour) })
	queued(t, s, 2)
	unlock()
	wg.Wait()
	if got := s.batches() - before; got != 2 {
		t.Errorf("took %d batches, want 2", got)
	}
	if !errors.Is(errA, effector.ErrNotOwner) {
		t.Errorf("the stale completion: %v, want ErrNotOwner", errA)
	}
	if errB != nil {
		t.Errorf("the owner's completion in the same batch: %v", errB)
	}
	storetest.WantState(t, s, "a", effector.InFlight)
	storetest.WantState(t, s, "b", effector.Done)
}

// TestServerCrashMidBatch crashes the server while 16 workers claim and
// complete intents in shared transactions, and checks what each caller was
// told against what the restarted server holds: every Complete that returned
// nil has its result, byte for byte; every Claimed claim is held (in flight
// or done); no intent was claimed twice.
func TestServerCrashMidBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := pgtest.Start(t)
	pool := migrated(t, srv)
	s := lingering(openForTest(t, pool))
	const workers, perWorker = 16, 150
	var (
		mu        sync.Mutex
		claimed   = map[string]int{}
		completed = map[string]string{}
		progress  atomic.Int64
	)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				id := fmt.Sprintf("w%02d-%04d", w, i)
				c, err := s.Claim(ctx, id, storetest.Call, time.Minute)
				if err != nil || c.State != effector.Claimed {
					continue // the crash: move on
				}
				mu.Lock()
				claimed[id]++
				mu.Unlock()
				result := "result of " + id
				if err := s.Complete(ctx, id, c.Token, []byte(result), time.Hour); err == nil {
					mu.Lock()
					completed[id] = result
					mu.Unlock()
				}
				progress.Add(1)
			}
		})
	}
	for progress.Load() < workers*20 {
		time.Sleep(time.Millisecond)
	}
	srv.Restart(t)
	wg.Wait()
	if s.ops() <= s.batches() {
		t.Fatalf("%d ops in %d transactions: nothing was batched", s.ops(), s.batches())
	}
	if len(completed) == workers*perWorker {
		t.Fatal("no call failed: the crash landed after the run")
	}
	rows := map[string][]byte{}
	done := map[string]bool{}
	r, err := pool.Query(ctx, `SELECT intent_id, done, result FROM toolreg_effector_dedup`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var id, result []byte
		var d bool
		if err := r.Scan(&id, &d, &result); err != nil {
			t.Fatal(err)
		}
		rows[string(id)], done[string(id)] = result, d
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	for id, n := range claimed {
		if n != 1 {
			t.Errorf("intent %s claimed %d times", id, n)
		}
		if _, ok := rows[id]; !ok {
			t.Errorf("intent %s: its Claim returned Claimed, but the server has no row for it", id)
		}
	}
	for id, want := range completed {
		if !done[id] || string(rows[id]) != want {
			t.Errorf("intent %s: its Complete returned nil, but the server holds done=%v %q", id, done[id], rows[id])
		}
	}
	t.Logf("%d claimed, %d completed, %d ops in %d transactions", len(claimed), len(completed), s.ops(), s.batches())
}

// The store's lanes default to the pool's size; a negative count or batch
// size is refused, saying what to give.
func TestLanesDefaultToThePoolsSize(t *testing.T) {
	t.Parallel()
	pool := migrated(t, pgtest.Start(t))
	if s := openForTest(t, pool); len(s.lanes) != int(pool.Config().MaxConns) {
		t.Fatalf("%d lanes, want the pool's MaxConns %d", len(s.lanes), pool.Config().MaxConns)
	}
	if s := openForTest(t, pool, WithLanes(3)); len(s.lanes) != 3 {
		t.Fatalf("WithLanes(3): %d lanes", len(s.lanes))
	}
	for _, o := range []Option{WithLanes(-1), WithBatch(0)} {
		if _, err := Open(context.Background(), pool, o); err == nil || !strings.Contains(err.Error(), "want a positive number") {
			t.Errorf("Open with a bad option: %v, want it refused saying what to give", err)
		}
	}
}

// Ops fill the first lane up to a batch before a second lane opens: while
// the first lane's batch waits on a lock, the next ops queue behind it, not
// on a free lane, until it holds a full batch; the op after that opens the
// second lane, and every op commits once the lock is gone.
func TestOpsFillTheFirstLaneBeforeTheNext(t *testing.T) {
	t.Parallel()
	pool := migrated(t, pgtest.Start(t))
	const size = 6
	s := openForTest(t, pool, WithLanes(3), WithBatch(size))
	unlock := lockTable(t, pool)
	defer unlock() // on a failure too, so that the claims end
	var wg sync.WaitGroup
	claim := func(id string) {
		wg.Go(func() { storetest.MustClaim(t, s, id, time.Minute) })
	}
	claim("leader")
	leaderBlocked(t, s)
	for i := range size - 1 {
		claim(fmt.Sprintf("q-%d", i))
	}
	queued(t, s, size-1)
	if s.lanes[1].group.Leading() || s.lanes[2].group.Leading() {
		t.Fatal("an op took a second lane while the first held less than a batch")
	}
	claim("spill")
	for deadline := time.Now().Add(10 * time.Second); !s.lanes[1].group.Leading(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the op after a full batch did not open the second lane")
		}
	}
	if got := s.lanes[0].group.Queued(); got != size-1 {
		t.Errorf("%d ops queued on the first lane, want %d", got, size-1)
	}
	unlock()
	wg.Wait()
}
