package pgstore

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	toolreg "github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

type refundArgs struct {
	OrderID string `json:"order_id"`
	Amount  int    `json:"amount"`
}

// refundEffector is an effector on s whose refund tool runs fn.
func refundEffector(t testing.TB, s *Store, fn func(context.Context, refundArgs) (map[string]any, error), opts ...effector.Option) *effector.Effector {
	t.Helper()
	specs := []*toolreg.Spec{{
		Name: "refund", Description: "Refund an order.", SideEffect: true,
		Params: []*toolreg.Param{
			{Name: "order_id", Schema: toolreg.Schema{Type: toolreg.TypeString}},
			{Name: "amount", Schema: toolreg.Schema{Type: toolreg.TypeInteger}},
		},
	}}
	b := bindings.New(specs, bindings.EffectorOnly())
	bindings.Effect(b, "refund", fn)
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]effector.Option{effector.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	eff, err := effector.New(bound.Effector, s, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return eff
}

func refundIntent(seq int64) *intent.Intent {
	key := []byte("customer-42")
	now := time.Now()
	return &intent.Intent{
		ID: intent.IntentID(key, seq, 0), EntityKey: key, Seq: seq, StepIndex: 0,
		ToolName: "refund", ArgsJSON: []byte(`{"amount":30,"order_id":"o-1"}`),
		CreatedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(time.Hour).UnixMilli(),
		Kind: intent.KindTool,
	}
}

// refundsTable makes the table the refund tool writes to, in the store's
// own database.
func refundsTable(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `CREATE TABLE refunds (intent_id text, order_id text, amount int)`); err != nil {
		t.Fatal(err)
	}
}

func refunds(t testing.TB, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM refunds`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// writeRefund is the refund tool's effect, in the store's transaction.
func writeRefund(ctx context.Context, a refundArgs) error {
	tx, err := TxFrom(ctx)
	if err != nil {
		return err
	}
	in, _ := effector.IntentFrom(ctx)
	_, err = tx.Exec(ctx, `INSERT INTO refunds VALUES ($1, $2, $3)`, in.ID, a.OrderID, a.Amount)
	return err
}

// storeState is the intent's row: done, and whether a token holds it.
func storeState(t testing.TB, pool *pgxpool.Pool, id string) (done bool) {
	t.Helper()
	if err := pool.QueryRow(context.Background(), `SELECT done FROM toolreg_effector_dedup WHERE intent_id = $1`, []byte(id)).Scan(&done); err != nil {
		t.Fatal(err)
	}
	return done
}

func TestEffectInTheStoreTransactionCommitsWithItsResult(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, pgtest.Start(t))
	refundsTable(t, pool)
	s := openForTest(t, pool)
	runs := 0
	eff := refundEffector(t, s, func(ctx context.Context, a refundArgs) (map[string]any, error) {
		runs++
		if err := writeRefund(ctx, a); err != nil {
			return nil, err
		}
		// Before the commit, the write is not visible outside the transaction.
		if n := refunds(t, pool); n != 0 {
			t.Errorf("refunds seen outside the transaction before it commits: %d", n)
		}
		return map[string]any{"refunded": a.Amount}, nil
	})
	in := refundIntent(1)
	for i := range 3 {
		res, err := eff.Process(ctx, in)
		if err != nil || res.Status != intent.StatusOK {
			t.Fatalf("Process #%d: %v %v %s", i, err, res.Status, res.ErrorMessage)
		}
	}
	if n := refunds(t, pool); n != 1 || runs != 1 {
		t.Fatalf("refunds = %d, runs = %d, want 1 and 1", n, runs)
	}
	if !storeState(t, pool, in.ID) {
		t.Fatal("the result is not recorded")
	}
}

// TestErrorResultIsRecordedButItsWriteRolledBack: a function that wrote and
// then failed has its ERROR recorded, and its write undone.
func TestErrorResultIsRecordedButItsWriteRolledBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, pgtest.Start(t))
	refundsTable(t, pool)
	s := openForTest(t, pool)
	eff := refundEffector(t, s, func(ctx context.Context, a refundArgs) (map[string]any, error) {
		if err := writeRefund(ctx, a); err != nil {
			return nil, err
		}
		return nil, errors.New("the provider said no")
	})
	in := refundIntent(2)
	res, err := eff.Process(ctx, in)
	if err != nil || res.Status != intent.StatusError {
		t.Fatalf("Process: %v %v, want an ERROR result", err, res.Status)
	}
	if n := refunds(t, pool); n != 0 {
		t.Fatalf("refunds = %d after an ERROR, want 0 (rolled back)", n)
	}
	if !storeState(t, pool, in.ID) {
		t.Fatal("the ERROR result is not recorded")
	}
}

// TestKilledConnectionBeforeCommitLeavesNothingAndRetryAppliesOnce: the
// owner's connection is terminated by the server after the write, before the
// commit. Neither the write nor the result may survive, and the next owner
// applies the effect exactly once.
func TestKilledConnectionBeforeCommitLeavesNothingAndRetryAppliesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, pgtest.Start(t))
	refundsTable(t, pool)
	s := openForTest(t, pool)
	kill := true
	eff := refundEffector(t, s, func(ctx context.Context, a refundArgs) (map[string]any, error) {
		if err := writeRefund(ctx, a); err != nil {
			return nil, err
		}
		if kill {
			tx, _ := TxFrom(ctx)
			pid := tx.Conn().PgConn().PID()
			var ok bool
			if err := pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
				t.Errorf("pg_terminate_backend(%d): %v %v", pid, ok, err)
			}
		}
		return map[string]any{"refunded": a.Amount}, nil
	}, effector.WithLease(3*time.Second), effector.WithTimeout(time.Second), effector.WithStoreTimeout(500*time.Millisecond))
	in := refundIntent(3)
	if res, err := eff.Process(ctx, in); err == nil {
		t.Fatalf("Process with its connection killed before the commit: %v, want an error", res.Status)
	}
	if n := refunds(t, pool); n != 0 {
		t.Fatalf("refunds = %d after the killed commit, want 0", n)
	}
	if storeState(t, pool, in.ID) {
		t.Fatal("a result is recorded for a transaction that never committed")
	}
	kill = false
	res, err := eff.Process(ctx, in) // waits out the lapsed lease, then reclaims
	if err != nil || res.Status != intent.StatusOK {
		t.Fatalf("retry: %v %v %s", err, res.Status, res.ErrorMessage)
	}
	if _, err := eff.Process(ctx, in); err != nil {
		t.Fatal(err)
	}
	if n := refunds(t, pool); n != 1 {
		t.Fatalf("refunds = %d after the retry, want exactly 1", n)
	}
}

// TestStaleOwnerCommitFailsAndItsWriteIsNotApplied: the owner's lease
// lapses while its transaction is open, another owner claims the intent,
// and the stale owner's commit must fail and take its write with it.
func TestStaleOwnerCommitFailsAndItsWriteIsNotApplied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, pgtest.Start(t))
	refundsTable(t, pool)
	s := openForTest(t, pool)
	id := "stale-owner"
	c, err := s.Claim(ctx, id, call, 200*time.Millisecond)
	if err != nil || c.State != effector.Claimed {
		t.Fatalf("Claim: %v %v", c.State, err)
	}
	fctx, etx := s.WithEffectTx(ctx, id, c.Token)
	tx, err := TxFrom(fctx)
	if err != nil || !etx.Started() {
		t.Fatal("TxFrom did not open the transaction")
	}
	if _, err := tx.Exec(ctx, `INSERT INTO refunds VALUES ($1, 'o-1', 30)`, id); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the lease lapses
	c2, err := s.Claim(ctx, id, call, time.Minute)
	if err != nil || c2.State != effector.Claimed || !c2.Reclaimed {
		t.Fatalf("second owner's Claim: %+v %v", c2, err)
	}
	err = etx.Commit(ctx, []byte("stale"), time.Hour)
	if !errors.Is(err, effector.ErrNotOwner) {
		t.Fatalf("stale owner's Commit: %v, want ErrNotOwner", err)
	}
	if n := refunds(t, pool); n != 0 {
		t.Fatalf("refunds = %d after the stale owner's failed commit, want 0", n)
	}
	if err := s.Complete(ctx, id, c2.Token, []byte("fresh"), time.Hour); err != nil {
		t.Fatalf("the new owner cannot complete: %v", err)
	}
}

// A tool that never calls TxFrom keeps the ordinary path.
func TestToolWithoutTxKeepsTheOrdinaryPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, pgtest.Start(t))
	s := openForTest(t, pool)
	eff := refundEffector(t, s, func(ctx context.Context, a refundArgs) (map[string]any, error) {
		return map[string]any{"refunded": a.Amount}, nil
	})
	in := refundIntent(4)
	res, err := eff.Process(ctx, in)
	if err != nil || res.Status != intent.StatusOK || !storeState(t, pool, in.ID) {
		t.Fatalf("Process: %v %v", err, res.Status)
	}
	var open int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`).Scan(&open); err != nil || open != 0 {
		t.Fatalf("transactions left open: %d %v", open, err)
	}
}
