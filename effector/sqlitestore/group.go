package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Group commit. Every write of a Store (a claim, a completion, a release, a
// sweep) is an op queued on the store. The first caller to find no batch in
// progress leads: it takes every op queued (up to the batch size) and runs
// them in one BEGIN IMMEDIATE transaction, each in a savepoint of its own,
// then commits once, so one fsync covers them all. Ops that arrive meanwhile
// queue, and when the leader's commit is done the first of them leads the
// next batch. A caller returns only when the transaction holding its own op
// has committed (its record is durable) or failed; an op whose statement
// fails is rolled back to its savepoint and fails alone, with its own error,
// while the others commit.
//
// The window adapts: a caller alone finds no batch in progress and commits at
// once, as without batching. A leader waits for more ops only while other
// callers are inside the store on their way to queue one (a claim's first
// read, say), and then at most the batch delay (WithBatch; 200µs by default),
// and never once the batch is full.

// DefaultBatchSize and DefaultBatchDelay are WithBatch's defaults.
const (
	DefaultBatchSize  = 128
	DefaultBatchDelay = 200 * time.Microsecond
)

// WithBatch sets the most ops (claims, completions, releases) one
// transaction commits, and the longest a batch's leader waits for callers
// already inside the store to queue theirs. A size of 1 commits every op in a
// transaction of its own. Defaults: DefaultBatchSize, DefaultBatchDelay.
func WithBatch(size int, delay time.Duration) Option {
	return func(c *config) { c.batchSize, c.batchDelay = size, delay }
}

// op is one write waiting for its batch.
type op struct {
	ctx context.Context // the caller's: an op whose ctx has ended is not run
	fn  func(ctx context.Context, tx *sql.Tx, now int64) error
	// multi: fn writes more than once, so a failure midway must be rolled
	// back to a savepoint. A single statement that fails undoes itself.
	multi bool

	// Under group.mu:
	signal   chan struct{} // buffered 1: finished or made leader
	finished bool
	leader   bool
	err      error
}

// group queues a store's ops and elects their leaders.
type group struct {
	size  int
	delay time.Duration

	mu      sync.Mutex
	queue   []*op
	leading bool          // a leader is forming or committing a batch
	coming  int           // callers inside the store who will queue an op
	arrived chan struct{} // buffered 1: an op was queued, for a lingering leader

	batches, ops atomic.Int64 // committed so far, for benchmarks
}

var opPool = sync.Pool{New: func() any { return &op{signal: make(chan struct{}, 1)} }}

// enter says a caller is on its way to queue an op; leave, that it queued it
// or will not.
func (g *group) enter() {
	g.mu.Lock()
	g.coming++
	g.mu.Unlock()
}

func (g *group) leave() {
	g.mu.Lock()
	g.coming--
	g.mu.Unlock()
}

// write runs fn in a transaction, shared with other callers' ops, and
// returns fn's error or the transaction's.
func (s *Store) write(ctx context.Context, multi bool, fn func(ctx context.Context, tx *sql.Tx, now int64) error) error {
	g := &s.group
	o := opPool.Get().(*op)
	o.ctx, o.fn, o.multi = ctx, fn, multi
	g.mu.Lock()
	g.queue = append(g.queue, o)
	if !g.leading {
		g.leading = true
		o.leader = true
	}
	lead := o.leader
	g.mu.Unlock()
	if !lead {
		select {
		case g.arrived <- struct{}{}:
		default:
		}
	}
	for {
		if lead {
			s.lead(o)
		}
		select {
		case <-o.signal:
		case <-ctx.Done():
			if s.abandon(o) {
				return ctx.Err()
			}
			<-o.signal
		}
		g.mu.Lock()
		finished, err := o.finished, o.err
		lead = o.leader
		g.mu.Unlock()
		if finished {
			*o = op{signal: o.signal}
			opPool.Put(o)
			return err
		}
	}
}

// abandon takes o, whose caller's ctx ended, out of the queue if no batch has
// taken it yet, passing leadership on if o held it, and reports whether it
// did. A taken op runs to its end: its caller waits for the outcome.
func (s *Store) abandon(o *op) bool {
	g := &s.group
	g.mu.Lock()
	defer g.mu.Unlock()
	if o.finished {
		return false
	}
	for i, q := range g.queue {
		if q != o {
			continue
		}
		g.queue = append(g.queue[:i], g.queue[i+1:]...)
		if o.leader {
			s.handOff()
		}
		return true
	}
	return false
}

// handOff makes the first queued op's caller the next leader, or ends
// leading when none waits. g.mu is held.
func (s *Store) handOff() {
	g := &s.group
	if len(g.queue) == 0 {
		g.leading = false
		return
	}
	next := g.queue[0]
	next.leader = true
	select {
	case next.signal <- struct{}{}:
	default:
	}
}

// lead commits one batch, which holds self, then hands leadership on.
func (s *Store) lead(self *op) {
	g := &s.group
	g.mu.Lock()
	self.leader = false
	if g.delay > 0 {
		deadline := time.Now().Add(g.delay)
		for len(g.queue) < g.size && g.coming > 0 {
			left := time.Until(deadline)
			if left <= 0 {
				break
			}
			g.mu.Unlock()
			t := time.NewTimer(left)
			select {
			case <-g.arrived:
			case <-t.C:
			}
			t.Stop()
			g.mu.Lock()
		}
	}
	n := min(len(g.queue), g.size)
	batch := make([]*op, n)
	copy(batch, g.queue)
	g.queue = append(g.queue[:0], g.queue[n:]...)
	g.mu.Unlock()

	commitErr := s.commit(batch)
	g.batches.Add(1)
	g.ops.Add(int64(len(batch)))

	g.mu.Lock()
	for _, o := range batch {
		if o.err == nil {
			o.err = commitErr
		}
		o.finished = true
		if o != self {
			select {
			case o.signal <- struct{}{}:
			default:
			}
		}
	}
	s.handOff()
	g.mu.Unlock()
	select {
	case self.signal <- struct{}{}:
	default:
	}
}

// commit runs batch in one BEGIN IMMEDIATE transaction, with the current time
// in unix ns read once the write lock is held, and commits it. Each op's
// error is set in it; the returned error is the transaction's, for every op
// that had none of its own. When an automatic sweep is due it runs in the
// same transaction, so it costs no extra fsync.
func (s *Store) commit(batch []*op) error {
	// The statements run with a context no caller can end: interrupting one
	// would roll back the whole transaction, other callers' ops with it.
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil) // waits for the write lock, up to the busy timeout
	if err != nil {
		return explainBusy(err)
	}
	defer tx.Rollback()
	now := s.now()
	alone := len(batch) == 1
	for _, o := range batch {
		if err := o.ctx.Err(); err != nil {
			o.err = err
			continue
		}
		if alone {
			if o.err = o.fn(ctx, tx, now.UnixNano()); o.err != nil {
				return nil // rolled back: the op failed, with its own error
			}
			continue
		}
		if !o.multi {
			o.err = o.fn(ctx, tx, now.UnixNano())
			continue
		}
		if _, err := tx.ExecContext(ctx, `SAVEPOINT op`); err != nil {
			return err
		}
		if o.err = o.fn(ctx, tx, now.UnixNano()); o.err != nil {
			if _, err := tx.ExecContext(ctx, `ROLLBACK TO op`); err != nil {
				return fmt.Errorf("rolling back a failed op: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `RELEASE op`); err != nil {
			return err
		}
	}
	if s.sweepDue(now) {
		if _, err := s.exec(ctx, tx, `DELETE FROM effector_dedup WHERE intent_id IN
			(SELECT intent_id FROM effector_dedup WHERE `+sweepable+` LIMIT ?3)`,
			now.UnixNano(), now.UnixNano()-int64(attemptMemory), s.sweepBatch); err != nil {
			return fmt.Errorf("sweeping expired rows: %w", err)
		}
	}
	return tx.Commit()
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

// queryRow runs query in tx, as a statement prepared at Open if it is one.
func (s *Store) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Row, error) {
	if st := s.wstmts.lookup(query); st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...), nil
	}
	return tx.QueryRowContext(ctx, query, args...), nil
}

// read runs query on the read connections as a prepared statement.
func (s *Store) read(ctx context.Context, query string, args ...any) (*sql.Row, error) {
	st, err := s.rstmts.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryRowContext(ctx, args...), nil
}
