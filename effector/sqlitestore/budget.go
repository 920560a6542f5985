package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/beam-agents/toolreg/effector"
)

var _ effector.BudgetStore = (*Store)(nil)

// budgetSchema is the table of budget uses: one row per key and intent it
// counts, until expires_at. Open creates it with the dedup table.
const budgetSchema = `
CREATE TABLE IF NOT EXISTS effector_budget (
	budget_key   TEXT NOT NULL,
	intent_id    TEXT NOT NULL,
	expires_at   INTEGER NOT NULL, -- unix ns: when the use stops counting
	budget_limit INTEGER NOT NULL, -- the limit it was counted under
	PRIMARY KEY (budget_key, intent_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS effector_budget_expires_at ON effector_budget (expires_at);`

// The statements of a claim that counts, prepared at Open with the claim's
// own: per use, what the key counts now and whether it counts the intent
// already; then the use.
const (
	budgetRead = `SELECT
		(SELECT 1 FROM effector_budget WHERE budget_key = ?1 AND intent_id = ?2 AND expires_at > ?3),
		count(*), min(expires_at)
		FROM effector_budget WHERE budget_key = ?1 AND expires_at > ?3`
	budgetWrite = `INSERT OR REPLACE INTO effector_budget (budget_key, intent_id, expires_at, budget_limit) VALUES (?1, ?2, ?3, ?4)`
)

var budgetQueries = []string{budgetRead, budgetWrite}

// ClaimAdmit implements effector.BudgetStore: the claim and the count are
// one op of the claim's transaction, so counting costs no commit of its own.
func (s *Store) ClaimAdmit(ctx context.Context, intentID string, call effector.Call, lease time.Duration, uses []effector.BudgetUse) (effector.Claim, effector.Admission, error) {
	adm := effector.Admission{Refused: -1}
	if len(uses) == 0 {
		c, err := s.Claim(ctx, intentID, call, lease)
		return c, adm, err
	}
	c, err := s.claim(ctx, intentID, call, lease, func(ctx context.Context, tx *sql.Tx, now int64) error {
		adm = effector.Admission{Refused: -1} // a retried op starts afresh
		counted := make([]bool, len(uses))
		for i, u := range uses {
			var already sql.NullInt64
			var n int
			var first sql.NullInt64
			if err := s.queryRow(ctx, tx, budgetRead, u.Key, intentID, now).Scan(&already, &n, &first); err != nil {
				return err
			}
			if already.Valid {
				counted[i] = true
				continue
			}
			if n >= u.Limit {
				adm = effector.Admission{Refused: i, FreesAt: time.Unix(0, first.Int64)}
				if !first.Valid { // a limit of no calls
					adm.FreesAt = time.Unix(0, now)
				}
				return nil
			}
		}
		for i, u := range uses {
			if counted[i] {
				continue
			}
			if _, err := s.exec(ctx, tx, budgetWrite, u.Key, intentID, now+int64(u.Window), u.Limit); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return effector.Claim{}, effector.Admission{Refused: -1}, err
	}
	if c.State != effector.Claimed {
		adm = effector.Admission{Refused: -1}
	}
	return c, adm, nil
}

// sweepBudgets deletes, in the automatic sweep's transaction, at most a
// sweep batch of uses that stopped counting.
func (s *Store) sweepBudgets(ctx context.Context, tx *sql.Tx, now int64) error {
	_, err := s.exec(ctx, tx, `DELETE FROM effector_budget WHERE (budget_key, intent_id) IN
		(SELECT budget_key, intent_id FROM effector_budget WHERE expires_at <= ?1 LIMIT ?2)`, now, s.sweepBatch)
	if err != nil {
		return fmt.Errorf("sweeping expired budget uses: %w", err)
	}
	return nil
}

// BudgetUsage implements effector.BudgetStore: a read of a page of keys at
// a time, on the read connections, so writers wait for none of it.
func (s *Store) BudgetUsage(ctx context.Context, fn func(effector.BudgetUsage) error) error {
	after := ""
	for {
		now := s.now().UnixNano()
		rows, err := s.rdb.QueryContext(ctx, `SELECT b.budget_key, count(*), min(b.expires_at), max(b.expires_at),
			(SELECT l.budget_limit FROM effector_budget l WHERE l.budget_key = b.budget_key ORDER BY l.expires_at DESC LIMIT 1)
			FROM effector_budget b WHERE b.budget_key > ?1 AND b.expires_at > ?2
			GROUP BY b.budget_key ORDER BY b.budget_key LIMIT ?3`, after, now, inspectPage)
		if err != nil {
			return fmt.Errorf("sqlitestore: listing budgets: %w", err)
		}
		var page []effector.BudgetUsage
		for rows.Next() {
			var u effector.BudgetUsage
			var first, last int64
			if err := rows.Scan(&u.Key, &u.Used, &first, &last, &u.Limit); err != nil {
				rows.Close()
				return fmt.Errorf("sqlitestore: listing budgets: %w", err)
			}
			u.FreesAt, u.Until = time.Unix(0, first), time.Unix(0, last)
			page = append(page, u)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("sqlitestore: listing budgets: %w", err)
		}
		for _, u := range page {
			if err := fn(u); err != nil {
				return err
			}
		}
		if len(page) < inspectPage {
			return nil
		}
		after = page[len(page)-1].Key
	}
}
