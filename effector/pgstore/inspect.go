package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/beam-agents/toolreg/effector"
)

var _ effector.Inspector = (*Store)(nil)

// inspectPage is how many records one statement of Records reads.
const inspectPage = 500

const recordColumns = `intent_id, done, result, expires_at, call_tool, attempts, expires_at > clock_timestamp()`

func scanRecord(row pgx.Row) (effector.Record, error) {
	var (
		id, result, tool []byte
		done, live       bool
		expires          time.Time
		attempts         int
	)
	if err := row.Scan(&id, &done, &result, &expires, &tool, &attempts, &live); err != nil {
		return effector.Record{}, err
	}
	r := effector.Record{ID: string(id), Tool: string(tool), Attempts: attempts, Deadline: expires, Result: result}
	switch {
	case done && live:
		r.State = effector.RecordDone
	case done:
		r.State = effector.RecordExpired
	case live:
		r.State = effector.RecordInFlight
	default:
		r.State = effector.RecordUnknown
	}
	return r, nil
}

// Records implements effector.Inspector: one statement per page, by id.
func (s *Store) Records(ctx context.Context, fn func(effector.Record) error) error {
	after := []byte{}
	for {
		rows, err := s.pool.Query(ctx, `SELECT `+recordColumns+` FROM toolreg_effector_dedup
			WHERE intent_id > $1 ORDER BY intent_id LIMIT $2`, after, inspectPage)
		if err != nil {
			return fmt.Errorf("pgstore: listing records: %w", err)
		}
		var page []effector.Record
		for rows.Next() {
			r, err := scanRecord(rows)
			if err != nil {
				rows.Close()
				return fmt.Errorf("pgstore: listing records: %w", err)
			}
			page = append(page, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("pgstore: listing records: %w", err)
		}
		for _, r := range page {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(page) < inspectPage {
			return nil
		}
		after = []byte(page[len(page)-1].ID)
	}
}

// Record implements effector.Inspector.
func (s *Store) Record(ctx context.Context, id string) (effector.Record, bool, error) {
	r, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+recordColumns+` FROM toolreg_effector_dedup WHERE intent_id = $1`, []byte(id)))
	if errors.Is(err, pgx.ErrNoRows) {
		return effector.Record{}, false, nil
	}
	if err != nil {
		return effector.Record{}, false, fmt.Errorf("pgstore: reading record %q: %w", id, err)
	}
	return r, true, nil
}

// Resolve implements effector.Inspector in one statement, by the server's
// clock; a refusal is explained by a second read.
func (s *Store) Resolve(ctx context.Context, id string, result []byte, ttl time.Duration) error {
	if err := checkDuration("result ttl", ttl); err != nil {
		return err
	}
	if result == nil {
		result = []byte{}
	}
	tag, err := s.pool.Exec(ctx, `UPDATE toolreg_effector_dedup
		SET done = true, token = NULL, result = $2, expires_at = clock_timestamp() + $3 * interval '1 microsecond'
		WHERE intent_id = $1 AND NOT done AND expires_at <= clock_timestamp()`, []byte(id), result, micros(ttl))
	if err != nil {
		return fmt.Errorf("pgstore: resolving %q: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	r, ok, err := s.Record(ctx, id)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%w: intent %q has no record", effector.ErrNotResolvable, id)
	case r.State == effector.RecordDone || r.State == effector.RecordExpired:
		return fmt.Errorf("%w: intent %q is done", effector.ErrNotResolvable, id)
	}
	return fmt.Errorf("%w: intent %q is still leased", effector.ErrNotResolvable, id)
}

var _ effector.ProgressPurger = (*Store)(nil)

// Purge implements effector.Inspector: Sweep.
func (s *Store) Purge(ctx context.Context, olderThan time.Duration) (int64, error) {
	return s.PurgeProgress(ctx, olderThan, nil)
}

// PurgeProgress implements effector.ProgressPurger.
func (s *Store) PurgeProgress(ctx context.Context, olderThan time.Duration, progress func(deleted int64)) (int64, error) {
	if olderThan < 0 {
		return 0, fmt.Errorf("pgstore: Purge: olderThan %v is negative: give 0 or more", olderThan)
	}
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, purgeSQL, s.sweepBatch, micros(AttemptMemory), micros(olderThan))
		if err != nil {
			return total, fmt.Errorf("pgstore: purging expired rows: %w", err)
		}
		total += tag.RowsAffected()
		if progress != nil {
			progress(total)
		}
		if tag.RowsAffected() < int64(s.sweepBatch) {
			return total, nil
		}
	}
}

// purgeSQL is sweepSQL for rows that expired at least $3 microseconds ago.
const purgeSQL = `DELETE FROM toolreg_effector_dedup WHERE intent_id IN (
		SELECT intent_id FROM toolreg_effector_dedup
		WHERE expires_at <= clock_timestamp() - $3 * interval '1 microsecond' AND (done OR expires_at <= clock_timestamp() - $2 * interval '1 microsecond')
		ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
	AND expires_at <= clock_timestamp() - $3 * interval '1 microsecond' AND (done OR expires_at <= clock_timestamp() - $2 * interval '1 microsecond')`
