package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
	token        TEXT NOT NULL,    -- the token of the claim that counted it
	PRIMARY KEY (budget_key, intent_id)
) WITHOUT ROWID;
`

// budgetRead reads, for k uses of intent ?1 at ?2 (keys ?3...), whether
// each key counts the intent already, how many uses it counts, and when its
// oldest stops: one row per use, in one statement.
func budgetRead(k int) string {
	parts := make([]string, k)
	for i := range k {
		key := "?" + strconv.Itoa(3+i)
		parts[i] = `SELECT ` + strconv.Itoa(i) + `,
			EXISTS (SELECT 1 FROM effector_budget WHERE budget_key = ` + key + ` AND intent_id = ?1 AND expires_at > ?2),
			(SELECT count(*) FROM effector_budget WHERE budget_key = ` + key + ` AND expires_at > ?2),
			(SELECT min(expires_at) FROM effector_budget WHERE budget_key = ` + key + ` AND expires_at > ?2)`
	}
	return strings.Join(parts, " UNION ALL ")
}

// budgetCount counts intent ?1 at ?2 under k keys ((key, window, limit)
// each, from ?4), all or none, as counted by the claim of token ?3: under
// each key that does not count it yet, unless one of those is full. One
// statement: the hot path of a claim that counts (a fresh intent under
// budgets with room) costs the claim this one statement more.
func budgetCount(k int) string {
	if k == 1 { // the effector's: one per_entity budget
		return `INSERT OR REPLACE INTO effector_budget (budget_key, intent_id, expires_at, budget_limit, token)
		SELECT ?4, ?1, ?2 + ?5, ?6, ?3
		WHERE NOT EXISTS (SELECT 1 FROM effector_budget WHERE budget_key = ?4 AND intent_id = ?1 AND expires_at > ?2)
		AND (SELECT count(*) FROM effector_budget WHERE budget_key = ?4 AND expires_at > ?2) < ?6`
	}
	rows := make([]string, k)
	for i := range k {
		n := 4 + 3*i
		rows[i] = "(?" + strconv.Itoa(n) + ", ?" + strconv.Itoa(n+1) + ", ?" + strconv.Itoa(n+2) + ")"
	}
	return `WITH u(k, win, lim) AS (VALUES ` + strings.Join(rows, ", ") + `),
	c AS MATERIALIZED (SELECT k, win, lim,
		EXISTS (SELECT 1 FROM effector_budget b WHERE b.budget_key = u.k AND b.intent_id = ?1 AND b.expires_at > ?2) AS counted,
		(SELECT count(*) FROM effector_budget b WHERE b.budget_key = u.k AND b.expires_at > ?2) AS n
		FROM u)
	INSERT OR REPLACE INTO effector_budget (budget_key, intent_id, expires_at, budget_limit, token)
	SELECT k, ?1, ?2 + win, lim, ?3 FROM c WHERE NOT counted AND NOT EXISTS (SELECT 1 FROM c WHERE NOT counted AND n >= lim)`
}

// budgetUncount takes back what budgetCount counted for the claim of
// token ?2 of intent ?1, which did not take the intent.
const budgetUncount = `DELETE FROM effector_budget WHERE intent_id = ?1 AND token = ?2`

// budgetQueries are the statements prepared at Open with the claim's own,
// for one and two uses, which an intent's budgets are (per_activation,
// per_entity).
var budgetQueries = []string{budgetCount(1), budgetCount(2), budgetRead(1), budgetRead(2)}

// budgetOp counts an intent against its budgets in its claim's op, in the
// claim's transaction, so counting costs no commit of its own. It counts
// first (an intent a claim then takes, the hot path, costs one statement
// more), then the claim runs: an intent counted and then not claimed (done,
// in flight, another call's) is taken back. Neither order leaves a claim
// uncounted: an op that fails after counting leaves at worst an intent
// counted and not claimed, which its next claim finds counted.
type budgetOp struct {
	s        *Store
	id       string
	token    string // the claim's
	uses     []effector.BudgetUse
	args     []any // budgetCount's
	inserted int64
	adm      effector.Admission
}

func (b *budgetOp) before(ctx context.Context, tx *sql.Tx, now int64) error {
	b.adm = effector.Admission{Refused: -1} // a retried op starts afresh
	b.args[1], b.args[2] = now, b.token
	res, err := b.s.exec(ctx, tx, budgetCount(len(b.uses)), b.args...)
	if err != nil {
		return err
	}
	b.inserted, err = res.RowsAffected()
	return err
}

func (b *budgetOp) after(ctx context.Context, tx *sql.Tx, now int64, claimed bool) error {
	switch {
	case !claimed && b.inserted > 0:
		_, err := b.s.exec(ctx, tx, budgetUncount, b.id, b.token)
		return err
	case !claimed || b.inserted > 0:
		return nil // nothing counted, or counted under the keys that did not count it yet
	}
	keys := make([]any, 0, 2+len(b.uses))
	keys = append(keys, b.id, now)
	for _, u := range b.uses {
		keys = append(keys, u.Key)
	}
	// Nothing written: every key counted the intent already (a
	// redelivery), or one is full. Which is rare enough to read.
	rows, err := b.s.query(ctx, tx, budgetRead(len(b.uses)), keys...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var i, n int
		var already bool
		var first sql.NullInt64
		if err := rows.Scan(&i, &already, &n, &first); err != nil {
			return err
		}
		if !already && n >= b.uses[i].Limit && (b.adm.Refused < 0 || i < b.adm.Refused) {
			b.adm = effector.Admission{Refused: i, FreesAt: time.Unix(0, first.Int64)}
			if !first.Valid { // a limit of no calls
				b.adm.FreesAt = time.Unix(0, now)
			}
		}
	}
	return rows.Err()
}

// ClaimAdmit implements effector.BudgetStore; see budgetOp.
func (s *Store) ClaimAdmit(ctx context.Context, intentID string, call effector.Call, lease time.Duration, uses []effector.BudgetUse) (effector.Claim, effector.Admission, error) {
	if len(uses) == 0 {
		c, err := s.Claim(ctx, intentID, call, lease)
		return c, effector.Admission{Refused: -1}, err
	}
	b := &budgetOp{s: s, id: intentID, uses: uses, args: make([]any, 0, 3+3*len(uses))}
	b.args = append(b.args, intentID, nil, nil)
	for _, u := range uses {
		b.args = append(b.args, u.Key, int64(u.Window), u.Limit)
	}
	c, err := s.claim(ctx, intentID, call, lease, b)
	if err != nil || c.State != effector.Claimed {
		return c, effector.Admission{Refused: -1}, err
	}
	return c, b.adm, nil
}

// sweepBudgets deletes, in the automatic sweep's transaction, the uses
// that stopped counting among the next sweep batch of rows after the last
// sweep's, in key order, starting over at the end: the table has no index
// by expiry (one would cost every count a page written more), so each sweep
// reads a batch of rows, and every row is read once a turn.
func (s *Store) sweepBudgets(ctx context.Context, tx *sql.Tx, now int64) error {
	from := s.budgetSweep
	var to [2]string
	err := tx.QueryRowContext(ctx, `SELECT budget_key, intent_id FROM (SELECT budget_key, intent_id FROM effector_budget
		WHERE (budget_key, intent_id) > (?1, ?2) ORDER BY budget_key, intent_id LIMIT ?3)
		ORDER BY budget_key DESC, intent_id DESC LIMIT 1`, from[0], from[1], s.sweepBatch).Scan(&to[0], &to[1])
	if errors.Is(err, sql.ErrNoRows) {
		s.budgetSweep = [2]string{} // the end: the next sweep starts over
		return nil
	}
	if err == nil {
		_, err = tx.ExecContext(ctx, `DELETE FROM effector_budget
			WHERE (budget_key, intent_id) > (?1, ?2) AND (budget_key, intent_id) <= (?3, ?4) AND expires_at <= ?5`,
			from[0], from[1], to[0], to[1], now)
	}
	if err != nil {
		return fmt.Errorf("sweeping expired budget uses: %w", err)
	}
	s.budgetSweep = to
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
