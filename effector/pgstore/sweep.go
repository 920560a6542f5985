package pgstore

import (
	"context"
	"fmt"
	"time"
)

// AttemptMemory is how long a sweep keeps a claim whose lease ran out with
// neither Complete nor Release (its owner crashed or stalled and may have
// run the tool: the row is how the next claim learns it is Reclaimed), and a
// released row that still counts earlier attempts. Keep intents' lives
// shorter.
const AttemptMemory = 24 * time.Hour

// sweepSQL deletes at most $1 sweepable rows: results past their ttl, and
// claims whose lease ran out more than AttemptMemory ago. SKIP LOCKED lets
// processes sweeping at once take disjoint rows, and leaves alone a row a
// claim is taking over; the outer condition is checked again on the locked
// row.
const sweepSQL = `DELETE FROM toolreg_effector_dedup WHERE intent_id IN (
		SELECT intent_id FROM toolreg_effector_dedup
		WHERE expires_at <= clock_timestamp() AND (done OR expires_at <= clock_timestamp() - $2 * interval '1 microsecond')
		ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
	AND expires_at <= clock_timestamp() AND (done OR expires_at <= clock_timestamp() - $2 * interval '1 microsecond')`

// Sweep deletes every expired result and every claim whose lease ran out
// more than AttemptMemory ago, in statements of at most WithSweepBatch rows
// each (so no statement holds many row locks), and returns how many rows it
// deleted. Several processes may sweep at once.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	var total int64
	for {
		n, err := s.sweepBatchOnce(ctx)
		total += n
		if err != nil {
			return total, err
		}
		if n < int64(s.sweepBatch) {
			return total, nil
		}
	}
}

func (s *Store) sweepBatchOnce(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, sweepSQL, s.sweepBatch, micros(AttemptMemory))
	if err != nil {
		return 0, fmt.Errorf("pgstore: sweeping expired rows: %w", err)
	}
	n, err := s.sweepBudgets(ctx) // budget.go
	return tag.RowsAffected() + n, err
}

// autoSweep deletes one batch of expired rows when WithSweepInterval has
// passed since this store's last one.
func (s *Store) autoSweep(ctx context.Context) error {
	if s.sweepInterval <= 0 {
		return nil
	}
	now := time.Now()
	s.mu.Lock()
	due := now.Sub(s.lastSweep) >= s.sweepInterval
	if due {
		s.lastSweep = now
	}
	s.mu.Unlock()
	if !due {
		return nil
	}
	_, err := s.sweepBatchOnce(ctx)
	return err
}
