package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/beam-agents/toolreg/internal/groupcommit"
)

// Group commit. Every write of a Store (a claim, a completion, a release, a
// sweep) is an op queued on the store. The first caller to find no batch in
// progress leads: it runs every op queued in one BEGIN IMMEDIATE
// transaction, takes the ops that arrive while they run into the same
// transaction (up to the batch size), then commits once, so one fsync covers
// them all. Ops that arrive after that queue, and when the leader's commit is
// done the first of them leads the next batch. A caller returns only when
// the transaction holding its own op has committed (its record is durable)
// or failed; an op whose statement fails undoes itself (an op of several
// statements is rolled back to its savepoint) and fails alone, with its own
// error, while the others commit.
//
// The window adapts: a caller alone finds no batch in progress and commits at
// once, as without batching. Before it commits, a leader waits for the
// callers the last batch released and those that queued while it ran (they
// are on their way back: a claim's caller with its completion), at most the
// batch delay (WithBatch; 200µs by default), and never once the batch is
// full. Without that wait, the callers a commit releases come back a moment
// after the next batch left, and every op waits for nearly two commits.

// DefaultBatchSize and DefaultBatchDelay are WithBatch's defaults.
const (
	DefaultBatchSize  = 128
	DefaultBatchDelay = 200 * time.Microsecond
)

// WithBatch sets the most ops (claims, completions, releases) one
// transaction commits, and the longest a batch's leader waits for callers
// already inside the store to queue theirs. A size of 1 commits every op in a
// transaction of its own. Each item of the batch forms is an op: a larger
// batch is split over transactions. Defaults: DefaultBatchSize,
// DefaultBatchDelay.
func WithBatch(size int, delay time.Duration) Option {
	return func(c *config) { c.batchSize, c.batchDelay = size, delay }
}

// writeOp is one op: fn runs in the batch's transaction; multi says fn writes
// more than once, so a failure midway must be rolled back to a savepoint (a
// single statement that fails undoes itself).
type writeOp struct {
	fn    func(ctx context.Context, tx *sql.Tx, now int64) error
	multi bool
}

// write runs fn in a transaction, shared with other callers' ops, and
// returns fn's error or the transaction's.
func (s *Store) write(ctx context.Context, multi bool, fn func(ctx context.Context, tx *sql.Tx, now int64) error) error {
	return s.group.Do(ctx, writeOp{fn: fn, multi: multi}).Err
}

// commitBatch commits batch and the ops more hands over while it runs (see
// groupcommit.NewStream), and gives each op without an error of its own the
// transaction's.
func (s *Store) commitBatch(batch []*groupcommit.Op[writeOp], more func() []*groupcommit.Op[writeOp]) {
	all, err := s.commit(batch, more)
	for _, o := range all {
		if o.Err == nil {
			o.Err = err
		}
	}
}

// commit runs batch in one BEGIN IMMEDIATE transaction, then the ops more
// hands over while it runs (callers on their way back: their statements run
// while others are still coming, not after), each with the current time in
// unix ns read once the write lock is held, and commits once more has none.
// It returns every op it ran. Each op's error is set in it; the returned
// error is the transaction's, for every op that had none of its own. Ops
// more did not hand over stay queued for the next batch. When an automatic
// sweep is due it runs in the same transaction, so it costs no extra fsync.
func (s *Store) commit(batch []*groupcommit.Op[writeOp], more func() []*groupcommit.Op[writeOp]) ([]*groupcommit.Op[writeOp], error) {
	// The statements run with a context no caller can end: interrupting one
	// would roll back the whole transaction, other callers' ops with it.
	ctx := context.Background()
	tx, err := beginWrite(ctx, s.db, s.busyTimeout)
	if err != nil {
		return batch, explainBusy(err)
	}
	defer tx.Rollback()
	var all []*groupcommit.Op[writeOp]
	var now time.Time
	for ops := batch; len(ops) > 0; ops = more() {
		all = append(all, ops...)
		now = s.now()
		if err := s.run(ctx, tx, now.UnixNano(), ops); err != nil {
			return all, err
		}
	}
	if s.sweepDue(now) {
		if _, err := s.exec(ctx, tx, `DELETE FROM effector_dedup WHERE intent_id IN
			(SELECT intent_id FROM effector_dedup WHERE `+sweepable+` LIMIT ?3)`,
			now.UnixNano(), now.UnixNano()-int64(attemptMemory), s.sweepBatch); err != nil {
			return all, fmt.Errorf("sweeping expired rows: %w", err)
		}
		if err := s.sweepBudgets(ctx, tx, now.UnixNano()); err != nil {
			return all, err
		}
	}
	return all, tx.Commit()
}

// run runs ops in tx, setting each one's error. An op of several statements
// runs in a savepoint, rolled back if it fails; a single statement that
// fails undoes itself. The error returned is one that ends the transaction.
func (s *Store) run(ctx context.Context, tx *sql.Tx, now int64, ops []*groupcommit.Op[writeOp]) error {
	for _, o := range ops {
		if err := o.Ctx.Err(); err != nil {
			o.Err = err
			continue
		}
		if !o.In.multi {
			o.Err = o.In.fn(ctx, tx, now)
			continue
		}
		if _, err := s.exec(ctx, tx, savepoint); err != nil {
			return err
		}
		if o.Err = o.In.fn(ctx, tx, now); o.Err != nil {
			if _, err := s.exec(ctx, tx, rollbackTo); err != nil {
				return fmt.Errorf("rolling back a failed op: %w", err)
			}
		}
		if _, err := s.exec(ctx, tx, release); err != nil {
			return err
		}
	}
	return nil
}

// stmts holds a database's statements, each prepared once: parsing a
// statement costs more than running it, and a batch's leader runs every op's
// statements in turn.
type stmts struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// get returns query's statement, preparing it on first use.
func (c *stmts) get(ctx context.Context, query string) (*sql.Stmt, error) {
	if st := c.lookup(query); st != nil {
		return st, nil
	}
	if err := c.prepare(ctx, query); err != nil {
		return nil, err
	}
	return c.lookup(query), nil
}

func (c *stmts) lookup(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[query]
}

func (c *stmts) prepare(ctx context.Context, query string) error {
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*sql.Stmt)
	}
	if c.m[query] != nil {
		return st.Close()
	}
	c.m[query] = st
	return nil
}

func (c *stmts) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, st := range c.m {
		errs = append(errs, st.Close())
	}
	c.m = nil
	return errors.Join(errs...)
}

// exec runs query in tx, as a statement prepared at Open if it is one.
// (Nothing can be prepared in a batch: the one write connection is the
// batch's.)
func (s *Store) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := s.wstmts.lookup(query); st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// The statements of an op of several statements, prepared at Open.
const (
	savepoint  = `SAVEPOINT op`
	rollbackTo = `ROLLBACK TO op`
	release    = `RELEASE op`
)

// query runs query in tx, as a statement prepared at Open if it is one.
func (s *Store) query(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if st := s.wstmts.lookup(query); st != nil {
		return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}

// queryRow runs query in tx, as a statement prepared at Open if it is one.
func (s *Store) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := s.wstmts.lookup(query); st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// read runs query on the read connections as a prepared statement.
func (s *Store) read(ctx context.Context, query string, args ...any) (*sql.Row, error) {
	st, err := s.rstmts.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryRowContext(ctx, args...), nil
}
