package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/beam-agents/toolreg/effector"
)

var _ effector.Inspector = (*Store)(nil)

// inspectPage is how many records one read transaction of Records returns.
const inspectPage = 500

func (s *Store) record(now int64, id string, done bool, result []byte, expiresAt int64, call []byte, attempts int) effector.Record {
	r := effector.Record{ID: id, Attempts: attempts, Deadline: time.Unix(0, expiresAt), Result: result}
	if len(call) > 32 {
		r.Tool = string(call[32:])
	}
	switch {
	case done && expiresAt > now:
		r.State = effector.RecordDone
	case done:
		r.State = effector.RecordExpired
	case expiresAt > now:
		r.State = effector.RecordInFlight
	default:
		r.State = effector.RecordUnknown
	}
	return r
}

// Records implements effector.Inspector: a read transaction per page, so
// writers wait for none of it.
func (s *Store) Records(ctx context.Context, fn func(effector.Record) error) error {
	after := ""
	for {
		rows, err := s.db.QueryContext(ctx, `SELECT intent_id, done, result, expires_at, call, attempts
			FROM effector_dedup WHERE intent_id > ? ORDER BY intent_id LIMIT ?`, after, inspectPage)
		if err != nil {
			return fmt.Errorf("sqlitestore: listing records: %w", err)
		}
		now := s.now().UnixNano()
		var page []effector.Record
		for rows.Next() {
			var (
				id           string
				done         bool
				result, call []byte
				expires      int64
				attempts     int
			)
			if err := rows.Scan(&id, &done, &result, &expires, &call, &attempts); err != nil {
				rows.Close()
				return fmt.Errorf("sqlitestore: listing records: %w", err)
			}
			page = append(page, s.record(now, id, done, result, expires, call, attempts))
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("sqlitestore: listing records: %w", err)
		}
		for _, r := range page {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(page) < inspectPage {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// Record implements effector.Inspector.
func (s *Store) Record(ctx context.Context, id string) (effector.Record, bool, error) {
	var (
		done         bool
		result, call []byte
		expires      int64
		attempts     int
	)
	err := s.db.QueryRowContext(ctx, `SELECT done, result, expires_at, call, attempts FROM effector_dedup WHERE intent_id = ?`, id).
		Scan(&done, &result, &expires, &call, &attempts)
	if errors.Is(err, sql.ErrNoRows) {
		return effector.Record{}, false, nil
	}
	if err != nil {
		return effector.Record{}, false, fmt.Errorf("sqlitestore: reading record %q: %w", id, err)
	}
	return s.record(s.now().UnixNano(), id, done, result, expires, call, attempts), true, nil
}

// Resolve implements effector.Inspector in one write transaction.
func (s *Store) Resolve(ctx context.Context, id string, result []byte, ttl time.Duration) error {
	if err := checkDuration("ttl", ttl); err != nil {
		return err
	}
	return s.write(ctx, false, func(ctx context.Context, tx *sql.Tx, now int64) error {
		res, err := tx.ExecContext(ctx, `UPDATE effector_dedup SET done = 1, token = NULL, result = ?, expires_at = ?
			WHERE intent_id = ? AND done = 0 AND expires_at <= ?`, result, now+int64(ttl), id, now)
		if err != nil {
			return fmt.Errorf("sqlitestore: resolving %q: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var done bool
		var expires int64
		err = tx.QueryRowContext(ctx, `SELECT done, expires_at FROM effector_dedup WHERE intent_id = ?`, id).Scan(&done, &expires)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("%w: intent %q has no record", effector.ErrNotResolvable, id)
		case err != nil:
			return fmt.Errorf("sqlitestore: resolving %q: %w", id, err)
		case done:
			return fmt.Errorf("%w: intent %q is done", effector.ErrNotResolvable, id)
		default:
			return fmt.Errorf("%w: intent %q is still leased, for %v more", effector.ErrNotResolvable, id, time.Duration(expires-now).Round(time.Millisecond))
		}
	})
}

var _ effector.ProgressPurger = (*Store)(nil)

// Purge implements effector.Inspector: Sweep, a batch per transaction.
func (s *Store) Purge(ctx context.Context, olderThan time.Duration) (int64, error) {
	return s.PurgeProgress(ctx, olderThan, nil)
}

// PurgeProgress implements effector.ProgressPurger.
func (s *Store) PurgeProgress(ctx context.Context, olderThan time.Duration, progress func(deleted int64)) (int64, error) {
	if olderThan < 0 {
		return 0, fmt.Errorf("sqlitestore: Purge: olderThan %v is negative: give 0 or more", olderThan)
	}
	var total int64
	for {
		var n int64
		err := s.write(ctx, false, func(ctx context.Context, tx *sql.Tx, now int64) error {
			res, err := tx.ExecContext(ctx, `DELETE FROM effector_dedup WHERE intent_id IN
				(SELECT intent_id FROM effector_dedup WHERE `+sweepable+` LIMIT ?3)`, now-int64(olderThan), now-int64(attemptMemory), inspectPage)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return total, fmt.Errorf("sqlitestore: purging: %w", err)
		}
		total += n
		if progress != nil {
			progress(total)
		}
		if n < inspectPage {
			return total, nil
		}
		// Let other processes' writers in between batches: a batch that
		// takes the lock again at once could starve them past their busy
		// timeout.
		t := time.NewTimer(purgePause)
		select {
		case <-ctx.Done():
			t.Stop()
			return total, fmt.Errorf("sqlitestore: purging: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// purgePause is Purge's pause between batches, long enough for a writer
// waiting on the lock to get it: this store's writers try it again within a
// millisecond (beginWrite); SQLite's own busy handler, within 25 ms for its
// first 300 ms of waiting.
const purgePause = 30 * time.Millisecond
