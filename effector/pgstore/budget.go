package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/beam-agents/toolreg/effector"
)

var _ effector.BudgetStore = (*Store)(nil)

// admitSQL counts intent $1 against the uses ($2 keys, $3 limits, $4
// windows in microseconds), all or none, on the server's clock: it returns
// the first use with no room (its 1-based index and when it frees), or no
// row when the intent is counted (or already was) under every key. It runs
// after the keys' advisory locks are taken, in a statement of its own, so
// that its snapshot sees every use committed before them.
const admitSQL = `WITH u AS (
		SELECT * FROM unnest($2::text[], $3::integer[], $4::bigint[]) WITH ORDINALITY AS u(k, lim, win, i)
	), st AS (
		SELECT u.i, u.k, u.lim, u.win,
			EXISTS (SELECT 1 FROM toolreg_effector_budget b
				WHERE b.budget_key = u.k AND b.intent_id = $1 AND b.expires_at > clock_timestamp()) AS counted,
			(SELECT count(*) FROM toolreg_effector_budget b
				WHERE b.budget_key = u.k AND b.expires_at > clock_timestamp()) AS n,
			(SELECT min(b.expires_at) FROM toolreg_effector_budget b
				WHERE b.budget_key = u.k AND b.expires_at > clock_timestamp()) AS first
		FROM u
	), refused AS (
		SELECT i, coalesce(first, clock_timestamp()) AS frees FROM st WHERE NOT counted AND n >= lim ORDER BY i LIMIT 1
	), ins AS (
		INSERT INTO toolreg_effector_budget (budget_key, intent_id, expires_at, budget_limit)
		SELECT k, $1, clock_timestamp() + win * interval '1 microsecond', lim FROM st
		WHERE NOT counted AND NOT EXISTS (SELECT 1 FROM refused)
		ON CONFLICT (budget_key, intent_id) DO UPDATE SET expires_at = excluded.expires_at, budget_limit = excluded.budget_limit
	)
	SELECT i, frees FROM refused`

// lockSQL takes the transaction-scoped advisory lock of each key, in key
// order, so that two admissions of overlapping keys take turns and never
// deadlock.
const lockSQL = `SELECT count(pg_advisory_xact_lock(hashtextextended(k, 7357))) FROM (SELECT DISTINCT k FROM unnest($1::text[]) AS k ORDER BY k) s`

// ClaimAdmit implements effector.BudgetStore: the claim (in the group
// commit of claims), then, when it claims, the count in a transaction of its
// own, one round trip: the keys' locks and the count. An intent claimed and
// not counted yet (its owner died in between) is counted by its next
// claim, before it runs.
func (s *Store) ClaimAdmit(ctx context.Context, intentID string, call effector.Call, lease time.Duration, uses []effector.BudgetUse) (effector.Claim, effector.Admission, error) {
	adm := effector.Admission{Refused: -1}
	c, err := s.Claim(ctx, intentID, call, lease)
	if err != nil || c.State != effector.Claimed || len(uses) == 0 {
		return c, adm, err
	}
	keys := make([]string, len(uses))
	limits := make([]int32, len(uses))
	windows := make([]int64, len(uses))
	for i, u := range uses {
		keys[i], limits[i], windows[i] = u.Key, int32(min(u.Limit, 1<<31-1)), micros(u.Window)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(lockSQL, keys)
		b.Queue(admitSQL, []byte(intentID), keys, limits, windows)
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return err
		}
		var i int64
		var frees time.Time
		switch err := br.QueryRow().Scan(&i, &frees); {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		default:
			adm = effector.Admission{Refused: int(i - 1), FreesAt: frees}
		}
		return br.Close()
	})
	if err != nil {
		// The claim stays: its owner releases it, or it lapses, and the
		// next claim counts the intent.
		return effector.Claim{}, effector.Admission{Refused: -1}, fmt.Errorf("pgstore: counting intent %q against its budgets: %w", intentID, err)
	}
	return c, adm, nil
}

// sweepBudgets deletes at most a sweep batch of uses that stopped counting.
func (s *Store) sweepBudgets(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM toolreg_effector_budget WHERE (budget_key, intent_id) IN (
		SELECT budget_key, intent_id FROM toolreg_effector_budget WHERE expires_at <= clock_timestamp()
		ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)`, s.sweepBatch)
	if err != nil {
		return 0, fmt.Errorf("pgstore: sweeping expired budget uses: %w", err)
	}
	return tag.RowsAffected(), nil
}

// budgetPage is how many keys one query of BudgetUsage reads.
const budgetPage = 500

// BudgetUsage implements effector.BudgetStore, a page of keys per query.
func (s *Store) BudgetUsage(ctx context.Context, fn func(effector.BudgetUsage) error) error {
	after := ""
	for {
		rows, err := s.pool.Query(ctx, `SELECT b.budget_key, count(*), min(b.expires_at), max(b.expires_at),
			(SELECT l.budget_limit FROM toolreg_effector_budget l WHERE l.budget_key = b.budget_key ORDER BY l.expires_at DESC LIMIT 1)
			FROM toolreg_effector_budget b WHERE b.budget_key > $1 AND b.expires_at > clock_timestamp()
			GROUP BY b.budget_key ORDER BY b.budget_key LIMIT $2`, after, budgetPage)
		if err != nil {
			return fmt.Errorf("pgstore: listing budgets: %w", err)
		}
		var page []effector.BudgetUsage
		for rows.Next() {
			var u effector.BudgetUsage
			var used int64
			var limit int32
			if err := rows.Scan(&u.Key, &used, &u.FreesAt, &u.Until, &limit); err != nil {
				rows.Close()
				return fmt.Errorf("pgstore: listing budgets: %w", err)
			}
			u.Used, u.Limit = int(used), int(limit)
			page = append(page, u)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("pgstore: listing budgets: %w", err)
		}
		for _, u := range page {
			if err := fn(u); err != nil {
				return err
			}
		}
		if len(page) < budgetPage {
			return nil
		}
		after = page[len(page)-1].Key
	}
}
