package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

// Tests of the native batches (batch.go) beyond the conformance suite: the
// statements they send, a failure inside one, a batch cut off while it
// waits on a lock, and batches taking the same rows at once.

// TestNativeBatches runs the tests below on one server, each on a database
// of its own: starting a server costs seconds.
func TestNativeBatches(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	for _, tt := range []struct {
		name string
		run  func(*testing.T, *pgtest.Server)
	}{
		{"a batch is one statement, split at the store's limit", testBatchStatementsAndTheirLimit},
		{"an item Postgres refuses fails alone", testBatchItemPostgresRefusesFailsAlone},
		{"a batch cut off while it waits on a lock answers errors, and leaves each item as before or as its statement says", testBatchCutOffWhileItWaitsOnALock},
		{"concurrent batches of the same ids never deadlock", testConcurrentBatchesOfTheSameIDsNeverDeadlock},
		{"a batch failing at its commit answers nothing from its rows", testBatchFailingAtCommitAnswersNothingFromItsRows},
		{"a batch finds its rows by the key however small the table was when the pool began", testBatchFindsItsRowsByTheKeyAfterTheTableGrew},
		{"a pool without a description cache runs the batches too", testBatchesOnAPoolWithoutADescriptionCache},
		{"a batch cut off while its statement is described answers errors, and the next batch runs", testBatchCutOffWhileItsStatementIsDescribed},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, srv) })
	}
}

// statements counts the statements a pool sends, by their SQL.
type statements struct {
	mu sync.Mutex
	n  map[string]int
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n[data.SQL]++
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *statements) of(sql string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[sql]
}

// tracedPool is a second pool on pool's database whose statements are
// counted.
func tracedPool(t *testing.T, pool *pgxpool.Pool) (*pgxpool.Pool, *statements) {
	t.Helper()
	cfg := pool.Config().Copy()
	st := &statements{n: map[string]int{}}
	cfg.ConnConfig.Tracer = st
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, st
}

func claimReqs(prefix string, n int) []effector.ClaimRequest {
	reqs := make([]effector.ClaimRequest, n)
	for i := range reqs {
		reqs[i] = effector.ClaimRequest{IntentID: fmt.Sprintf("%s-%03d", prefix, i), Call: call, Lease: time.Minute}
	}
	return reqs
}

// A batch of 100 is one claim statement and one completion statement; a
// batch over the store's limit (items, or bytes of results) is split into
// as many statements as the limit needs, and every item is answered.
func testBatchStatementsAndTheirLimit(t *testing.T, srv *pgtest.Server) {
	t.Parallel()
	ctx := context.Background()
	pool, st := tracedPool(t, migrated(t, srv))

	s := openForTest(t, pool)
	reqs := claimReqs("hundred", 100)
	out := make([]effector.ClaimOutcome, len(reqs))
	s.ClaimBatch(ctx, reqs, out)
	comps := make([]effector.Completion, len(reqs))
	for i, o := range out {
		if o.Err != nil || o.Claim.State != effector.Claimed {
			t.Fatalf("item %d: %+v, %v", i, o.Claim, o.Err)
		}
		comps[i] = effector.Completion{IntentID: reqs[i].IntentID, Token: o.Claim.Token, Result: []byte(reqs[i].IntentID), TTL: time.Hour}
	}
	errs := make([]error, len(comps))
	s.CompleteBatch(ctx, comps, errs)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("completion %d: %v", i, err)
		}
	}
	if c, u := st.of(batchClaimSQL), st.of(batchCompleteSQL); c != 1 || u != 1 {
		t.Fatalf("a batch of 100 took %d claim and %d completion statements, want 1 and 1", c, u)
	}

	// Eight items a statement, and 1100 bytes: results of 300 bytes go
	// three to a statement.
	small := openForTest(t, pool, WithBatch(8))
	small.statementBytes = 1100
	reqs = claimReqs("split", 20)
	out = make([]effector.ClaimOutcome, len(reqs))
	small.ClaimBatch(ctx, reqs, out)
	if got := st.of(batchClaimSQL) - 1; got != 3 {
		t.Errorf("20 claims, 8 a statement, took %d statements, want 3", got)
	}
	comps = comps[:0]
	for i, o := range out {
		if o.Err != nil || o.Claim.State != effector.Claimed {
			t.Fatalf("item %d: %+v, %v", i, o.Claim, o.Err)
		}
		comps = append(comps, effector.Completion{IntentID: reqs[i].IntentID, Token: o.Claim.Token, Result: bytes.Repeat([]byte{byte(i)}, 300), TTL: time.Hour})
	}
	errs = make([]error, len(comps))
	small.CompleteBatch(ctx, comps, errs)
	if got := st.of(batchCompleteSQL) - 1; got != 7 {
		t.Errorf("20 completions of 300 bytes, 1100 bytes a statement, took %d statements, want 7", got)
	}
	s.ClaimBatch(ctx, reqs, out)
	for i, o := range out {
		if errs[i] != nil || o.Err != nil || o.Claim.State != effector.Done || !bytes.Equal(o.Claim.Result, comps[i].Result) {
			t.Fatalf("item %d: completed %v, then %s %v", i, errs[i], o.Claim.State, o.Err)
		}
	}
}

// Postgres refuses one item of a batch (a trigger): the statement rolls
// back, its items are sent one by one, and only that item fails, with
// Postgres's error, while the others are committed.
func testBatchItemPostgresRefusesFailsAlone(t *testing.T, srv *pgtest.Server) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, srv)
	poison(t, pool)
	s := openForTest(t, pool)
	reqs := []effector.ClaimRequest{
		{IntentID: "a", Call: call, Lease: time.Minute},
		{IntentID: "poison", Call: call, Lease: time.Minute},
		{IntentID: "b", Call: call, Lease: time.Minute},
	}
	out := make([]effector.ClaimOutcome, len(reqs))
	s.ClaimBatch(ctx, reqs, out)
	if out[1].Err == nil || !bytes.Contains([]byte(out[1].Err.Error()), []byte("poisoned row")) {
		t.Fatalf("the refused claim: %+v, %v; want Postgres's error", out[1].Claim, out[1].Err)
	}
	for _, i := range []int{0, 2} {
		if out[i].Err != nil || out[i].Claim.State != effector.Claimed {
			t.Fatalf("claim %s beside the refused one: %+v, %v", reqs[i].IntentID, out[i].Claim, out[i].Err)
		}
	}
	if s.statementFailures.Load() == 0 {
		t.Fatal("no batch statement failed: the trigger did not refuse the item")
	}
	other := openForTest(t, pool, WithBatch(1))
	storetest.WantState(t, other, "a", effector.InFlight)
	storetest.WantState(t, other, "b", effector.InFlight)

	errs := make([]error, 2)
	s.CompleteBatch(ctx, []effector.Completion{
		{IntentID: "a", Token: out[0].Claim.Token, Result: []byte("ok"), TTL: time.Hour},
		{IntentID: "b", Token: out[2].Claim.Token, Result: []byte("poison"), TTL: time.Hour},
	}, errs)
	if errs[0] != nil || errs[1] == nil || errors.Is(errs[1], effector.ErrNotOwner) {
		t.Fatalf("completions %v; want nil, and Postgres's error for the refused one", errs)
	}
	storetest.WantState(t, other, "b", effector.InFlight)
	if c := storetest.WantState(t, other, "a", effector.Done); string(c.Result) != "ok" {
		t.Fatalf("a holds %q", c.Result)
	}
}

// A batch's statement waits on a lock (another transaction holds the
// table), and its context ends, or its backend is killed: every item
// answers an error. A killed backend wrote nothing. A cancelled statement
// may still commit once the lock is freed: the server holds the whole
// statement and its Sync, and pgx's default on a cancelled context closes
// the connection, which the backend notices only after the statement (a
// pool with pgconn.CancelRequestContextWatcherHandler cancels it on the
// server instead). That is the store's contract, an error may hide a
// write, never the reverse: each item is then left as before the batch or
// as its statement says, and a completion sent again finds its own result
// there (ErrNotOwner; the effector then publishes the stored result).
func testBatchCutOffWhileItWaitsOnALock(t *testing.T, srv *pgtest.Server) {
	for _, how := range []string{"cancelled", "killed"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := migrated(t, srv)
			s := openForTest(t, pool)
			held := claimReqs("held", 10)
			hout := make([]effector.ClaimOutcome, len(held))
			s.ClaimBatch(ctx, held, hout)
			unlock := lockTable(t, pool)
			bctx, cancel := context.WithCancel(ctx)
			defer cancel()
			reqs := claimReqs("cut", 30)
			out := make([]effector.ClaimOutcome, len(reqs))
			comps := make([]effector.Completion, len(held))
			for i, o := range hout {
				comps[i] = effector.Completion{IntentID: held[i].IntentID, Token: o.Claim.Token, Result: []byte("r"), TTL: time.Hour}
			}
			errs := make([]error, len(comps))
			var wg sync.WaitGroup
			wg.Go(func() { s.ClaimBatch(bctx, reqs, out) })
			first := waiter(t, pool, 0)
			wg.Go(func() { s.CompleteBatch(bctx, comps, errs) })
			second := waiter(t, pool, first)
			if how == "cancelled" {
				cancel()
			} else {
				kill(t, pool, first)
				kill(t, pool, second)
			}
			wg.Wait()
			unlock()
			for i, o := range out {
				if o.Err == nil {
					t.Fatalf("claim %d of the cut-off batch answered %+v", i, o.Claim)
				}
			}
			for i, err := range errs {
				if err == nil {
					t.Fatalf("completion %d of the cut-off batch answered nil", i)
				}
			}
			gone(t, pool, first, second)
			written := map[string]bool{}
			rows, err := pool.Query(ctx, `SELECT convert_from(intent_id, 'UTF8'), done, token IS NOT NULL, coalesce(result, '') FROM toolreg_effector_dedup`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var (
					id           string
					done, tokens bool
					result       []byte
				)
				if err := rows.Scan(&id, &done, &tokens, &result); err != nil {
					t.Fatal(err)
				}
				switch {
				case strings.HasPrefix(id, "held-") && done && string(result) == "r":
					written[id] = true
				case strings.HasPrefix(id, "held-") && !done && tokens:
				case strings.HasPrefix(id, "cut-") && !done && tokens:
					written[id] = true
				default:
					t.Errorf("row %s after the cut-off batches: done %v, token %v, result %q", id, done, tokens, result)
				}
			}
			rows.Close()
			if how == "killed" && len(written) > 0 {
				t.Fatalf("rows of the killed batches were written: %v", written)
			}
			t.Logf("%d of the %d items cut off were written after all", len(written), len(reqs)+len(held))
			// The store works on: the completions sent again land or find
			// their own result, and the claims sent again take the intents
			// no cut-off claim took (those wait for their lease, like a
			// claim whose answer was lost).
			s.ClaimBatch(ctx, reqs, out)
			s.CompleteBatch(ctx, comps, errs)
			for i := range out {
				want := effector.Claimed
				if written[reqs[i].IntentID] {
					want = effector.InFlight
				}
				if out[i].Err != nil || out[i].Claim.State != want {
					t.Fatalf("claim %d after: %+v, %v; want %v", i, out[i].Claim, out[i].Err, want)
				}
			}
			for i, err := range errs {
				if written[comps[i].IntentID] {
					if !errors.Is(err, effector.ErrNotOwner) {
						t.Fatalf("completion %d after, which landed before: %v, want ErrNotOwner", i, err)
					}
					storetest.WantState(t, s, comps[i].IntentID, effector.Done)
				} else if err != nil {
					t.Fatalf("completion %d after: %v", i, err)
				}
			}
		})
	}
}

// gone waits until the backends pids have ended (a backend whose client
// hung up ends once its statement does).
func gone(t *testing.T, pool *pgxpool.Pool, pids ...int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)`, pids).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("backends %v still running", pids)
		}
	}
}

// Stores on two pools claim and complete batches of the same ids at once,
// each batch in its own order: every id is claimed exactly once, and no two
// statements ever deadlock (none fails), since each takes its rows in id
// order.
func testConcurrentBatchesOfTheSameIDsNeverDeadlock(t *testing.T, srv *pgtest.Server) {
	t.Parallel()
	ctx := context.Background()
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
	const ids, rounds, workers = 100, 20, 8
	claimed := make([]atomic.Int32, ids*rounds)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		s := stores[w%2]
		wg.Go(func() {
			<-start
			for r := range rounds {
				reqs := claimReqs(fmt.Sprintf("round-%d", r), ids)
				if w%2 == 1 {
					slices.Reverse(reqs)
				}
				// Rotate, so that each worker starts elsewhere.
				reqs = append(reqs[w*7%ids:], reqs[:w*7%ids]...)
				out := make([]effector.ClaimOutcome, len(reqs))
				s.ClaimBatch(ctx, reqs, out)
				var comps []effector.Completion
				for i, o := range out {
					if o.Err != nil {
						t.Errorf("worker %d: claim of %s: %v", w, reqs[i].IntentID, o.Err)
						return
					}
					if o.Claim.State == effector.Claimed {
						var n int
						fmt.Sscanf(reqs[i].IntentID[len(fmt.Sprintf("round-%d-", r)):], "%d", &n)
						claimed[r*ids+n].Add(1)
						comps = append(comps, effector.Completion{IntentID: reqs[i].IntentID, Token: o.Claim.Token, Result: []byte("r"), TTL: time.Hour})
					}
				}
				errs := make([]error, len(comps))
				s.CompleteBatch(ctx, comps, errs)
				for i, err := range errs {
					if err != nil {
						t.Errorf("worker %d: completion of %s: %v", w, comps[i].IntentID, err)
					}
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for i := range claimed {
		if n := claimed[i].Load(); n != 1 {
			t.Errorf("intent %d of round %d was claimed %d times, want 1", i%ids, i/ids, n)
		}
	}
	// A deadlock would fail a statement, whose items would then go one by
	// one: none did.
	for i, s := range stores {
		if n := s.statementFailures.Load(); n != 0 {
			t.Fatalf("store %d: %d batch statements failed (deadlocked), want none", i, n)
		}
	}
}

// A batch's statement runs, returns its rows, and then fails at its commit
// (a deferred constraint trigger refuses one row): no item is answered from
// those rows, which were never committed. The items go one by one, and only
// the refused one fails; nothing of it was written.
func testBatchFailingAtCommitAnswersNothingFromItsRows(t *testing.T, srv *pgtest.Server) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, srv)
	if _, err := pool.Exec(ctx, `
		CREATE FUNCTION poison_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.intent_id = 'commit-poison'::bytea OR NEW.result = 'commit-poison'::bytea THEN
				RAISE EXCEPTION 'poisoned at commit';
			END IF;
			RETURN NULL;
		END $$;
		CREATE CONSTRAINT TRIGGER poison_at_commit AFTER INSERT OR UPDATE ON toolreg_effector_dedup
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION poison_at_commit();`); err != nil {
		t.Fatal(err)
	}
	s := openForTest(t, pool)
	other := openForTest(t, pool, WithBatch(1))
	for _, ids := range [][]string{{"commit-poison"}, {"a", "commit-poison", "b"}} {
		reqs := make([]effector.ClaimRequest, len(ids))
		for i, id := range ids {
			reqs[i] = effector.ClaimRequest{IntentID: id, Call: call, Lease: time.Minute}
		}
		out := make([]effector.ClaimOutcome, len(reqs))
		s.ClaimBatch(ctx, reqs, out)
		for i, id := range ids {
			if id == "commit-poison" {
				if out[i].Err == nil {
					t.Fatalf("the claim refused at commit answered %+v", out[i].Claim)
				}
				var exists bool
				if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM toolreg_effector_dedup WHERE intent_id = 'commit-poison')`).Scan(&exists); err != nil || exists {
					t.Fatalf("the refused claim's row exists: %v, %v", exists, err)
				}
				continue
			}
			if out[i].Err != nil || out[i].Claim.State != effector.Claimed {
				t.Fatalf("claim %s beside the refused one: %+v, %v", id, out[i].Claim, out[i].Err)
			}
			storetest.WantState(t, other, id, effector.InFlight)
		}
		if len(ids) == 1 {
			continue
		}
		errs := make([]error, 2)
		s.CompleteBatch(ctx, []effector.Completion{
			{IntentID: "a", Token: out[0].Claim.Token, Result: []byte("commit-poison"), TTL: time.Hour},
			{IntentID: "b", Token: out[2].Claim.Token, Result: []byte("ok"), TTL: time.Hour},
		}, errs)
		if errs[0] == nil || errs[1] != nil {
			t.Fatalf("completions %v; want Postgres's error for the refused one, nil for the other", errs)
		}
		storetest.WantState(t, other, "a", effector.InFlight)
		storetest.WantState(t, other, "b", effector.Done)
	}
}

// testBatchFindsItsRowsByTheKeyAfterTheTableGrew runs batches on an empty
// table through a small pool, as a new deployment does, then grows the
// table past 100,000 rows with no ANALYZE (autovacuum's comes a minute or
// more later), and checks that the next claims, completions and releases
// read no row but their own: no sequential scan of the table. A statement
// prepared once and run through a generic plan, as pgx does by default,
// kept the plan chosen for the empty table, a scan of every row joined to
// the batch: BenchmarkServe, whose table grows 8,000 rows a run, went from
// 25.8k to 8.5k intents/s in 8 runs.
func testBatchFindsItsRowsByTheKeyAfterTheTableGrew(t *testing.T, srv *pgtest.Server) {
	t.Parallel()
	ctx := context.Background()
	_, url := srv.NewDatabase(t)
	pool := pgtest.SmallPool(t, url, 2)
	if err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	s := openForTest(t, pool)
	round := func(tag string, n int) {
		t.Helper()
		reqs := make([]effector.ClaimRequest, n)
		for i := range reqs {
			reqs[i] = effector.ClaimRequest{IntentID: fmt.Sprintf("%s-%d", tag, i), Call: call, Lease: time.Minute}
		}
		outs := make([]effector.ClaimOutcome, n)
		s.ClaimBatch(ctx, reqs, outs)
		comps := make([]effector.Completion, 0, n)
		rels := make([]effector.Release, 0, n)
		for i, o := range outs {
			if o.Err != nil || o.Claim.State != effector.Claimed {
				t.Fatalf("claim %s: %+v, %v", reqs[i].IntentID, o.Claim, o.Err)
			}
			if i%2 == 0 {
				comps = append(comps, effector.Completion{IntentID: reqs[i].IntentID, Token: o.Claim.Token, Result: []byte("ok"), TTL: time.Hour})
			} else {
				rels = append(rels, effector.Release{IntentID: reqs[i].IntentID, Token: o.Claim.Token})
			}
		}
		errs := make([]error, n)
		s.CompleteBatch(ctx, comps, errs)
		s.ReleaseBatch(ctx, rels, errs[len(comps):])
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 20 { // past Postgres's five custom plans, on each connection
		round(fmt.Sprintf("small%d", i), 4)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO toolreg_effector_dedup (intent_id, token, done, result, expires_at, call_digest, call_tool, attempts, reclaimed)
		SELECT ('old-' || g)::bytea, NULL, true, 'r', clock_timestamp() + interval '1 hour', $1, 'apply'::bytea, 1, false
		FROM generate_series(1, 100000) g`, call.Digest[:]); err != nil {
		t.Fatal(err)
	}
	seq0, idx0 := pgtest.Scans(t, pool, "toolreg_effector_dedup")
	for i := range 4 {
		round(fmt.Sprintf("large%d", i), 50)
	}
	seq1, idx1 := pgtest.Scans(t, pool, "toolreg_effector_dedup")
	if idx1 == idx0 {
		t.Fatal("the batches after the table grew made no index scan: the test sees no statistics")
	}
	if seq1 != seq0 {
		t.Errorf("the batches after the table grew to 100,000 rows scanned it whole %d times: a plan made for the empty table", seq1-seq0)
	}
}

// The batch statements run with pgx's description cache
// (QueryExecModeCacheDescribe), which a pool's configuration may turn off
// (description_cache_capacity=0); the store then sends them with their
// parameters as text, and every outcome is the same: a result's bytes come
// back exactly, whatever they hold.
func testBatchesOnAPoolWithoutADescriptionCache(t *testing.T, srv *pgtest.Server) {
	t.Parallel()
	ctx := context.Background()
	cfg := migrated(t, srv).Config().Copy()
	cfg.ConnConfig.DescriptionCacheCapacity = 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := openForTest(t, pool)
	if s.batchMode != pgx.QueryExecModeExec {
		t.Fatalf("batch mode %v on a pool without a description cache, want exec", s.batchMode)
	}
	reqs := claimReqs("nocache", 3)
	out := make([]effector.ClaimOutcome, len(reqs))
	s.ClaimBatch(ctx, reqs, out)
	comps := make([]effector.Completion, len(reqs))
	results := [][]byte{{0, 1, 2, 0xff}, []byte(`{"a":"\\x00"}`), {}}
	for i, o := range out {
		if o.Err != nil || o.Claim.State != effector.Claimed {
			t.Fatalf("claim %d: %+v, %v", i, o.Claim, o.Err)
		}
		comps[i] = effector.Completion{IntentID: reqs[i].IntentID, Token: o.Claim.Token, Result: results[i], TTL: time.Hour}
	}
	errs := make([]error, len(comps))
	s.CompleteBatch(ctx, comps, errs)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("completion %d: %v", i, err)
		}
	}
	s.ClaimBatch(ctx, reqs, out)
	for i, o := range out {
		if o.Err != nil || o.Claim.State != effector.Done || !bytes.Equal(o.Claim.Result, results[i]) {
			t.Fatalf("claim %d again: %+v, %v; want done with %q", i, o.Claim, o.Err, results[i])
		}
	}
}

// A connection's first batch statement is described before it runs
// (QueryExecModeCacheDescribe). A batch cut off during that step, cancelled
// or its backend killed, answers every item with an error and claims
// nothing; the store's next batch, on the same pool, is described afresh
// and claims them.
func testBatchCutOffWhileItsStatementIsDescribed(t *testing.T, srv *pgtest.Server) {
	for _, how := range []string{"cancelled", "killed"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := migrated(t, srv)
			fresh, err := pgxpool.NewWithConfig(ctx, pool.Config().Copy()) // no description cached
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(fresh.Close)
			s := openForTest(t, fresh)
			// ACCESS EXCLUSIVE blocks even the describe's parse of the
			// statement (which takes ACCESS SHARE on the table).
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, `LOCK TABLE toolreg_effector_dedup IN ACCESS EXCLUSIVE MODE`); err != nil {
				t.Fatal(err)
			}
			bctx, cancel := context.WithCancel(ctx)
			defer cancel()
			reqs := claimReqs("described-"+how, 5)
			out := make([]effector.ClaimOutcome, len(reqs))
			done := make(chan struct{})
			go func() { defer close(done); s.ClaimBatch(bctx, reqs, out) }()
			pid := waiter(t, pool, 0)
			if how == "cancelled" {
				cancel()
			} else {
				kill(t, pool, pid)
			}
			<-done
			tx.Rollback(ctx)
			for i, o := range out {
				if o.Err == nil {
					t.Fatalf("claim %d of the batch cut off in its describe answered %+v", i, o.Claim)
				}
			}
			s.ClaimBatch(ctx, reqs, out)
			for i, o := range out {
				if o.Err != nil || o.Claim.State != effector.Claimed || o.Claim.Attempts != 1 {
					t.Fatalf("claim %d after the cut-off batch: %+v, %v; want a first claim", i, o.Claim, o.Err)
				}
			}
		})
	}
}
