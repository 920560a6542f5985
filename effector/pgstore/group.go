package pgstore

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/beam-agents/toolreg/internal/groupcommit"
)

// Group commit. Every claim statement and every completion of a Store is an
// op queued on one of the store's groups (package internal/groupcommit), its
// lanes: the first lane that holds less than a batch of ops (queued or in
// flight), so that a second lane opens only when the first holds a full
// batch. The first caller to find no batch in progress on its lane leads: it
// takes every op queued (up to the batch size) and sends their statements in
// one pipeline, one round trip, which Postgres runs as one implicit
// transaction and commits once, so one write-ahead-log flush covers them
// all. Ops that arrive meanwhile queue, and when the leader's commit is done
// the first of them leads the next batch. A caller alone finds no batch in
// progress and sends its statement at once, as without batching: the window
// is the previous batch's round trip, with no added delay.
//
// Why fill one lane before the next, rather than send each op at once on a
// free lane: every commit costs the server far more than a statement (on a
// 2-core machine with fsync on, about 150-200µs of its processor time
// against 10-20µs), so ops spread over 4 lanes (batches of 2.5 ops at 16
// workers) cost 2-3x the processor time per intent of ops packed into one
// (batches of 8.5), and where the processor is the limit, throughput falls
// by as much. Measured with BenchmarkProcessWorkers's cpu-µs/intent.
//
// A caller returns only once the transaction holding its op has committed
// (the pipeline's results are read through its end, the commit's
// acknowledgement) or failed. A statement that fails rolls back the
// transaction it shares: then every op of the batch is run again on its own,
// so the failure is its op's alone, with its own error, and the others are
// committed. A batch's statements take their row locks in intent id order, so
// batches in flight at once, of one store's lanes or of many processes, never
// wait on each other in a cycle. Each lane has at most one batch in flight,
// so a store keeps at most WithLanes connections busy with them.
//
// Releases, sweeps and the effect transactions of TxFrom are not batched.

// WithLanes sets how many batches a store may have in flight at once, each
// on a connection of its own. An op joins the first lane holding less than
// a batch (WithBatch) of ops, queued or in flight, else the one holding the
// fewest: a lane opens only when those before it hold a full batch each, so
// commits are as few as the load allows. An op is sent at once when its
// lane has no batch in flight. More lanes let more ops wait at once without
// a batch waiting for another (Postgres shares one write-ahead-log flush
// among the commits that wait at the same moment, whichever connections they
// come from). Default (0): the pool's MaxConns.
func WithLanes(n int) Option {
	return func(c *config) { c.lanes = n }
}

// batches and ops are how many transactions the store's lanes committed and
// how many ops they held, for benchmarks and tests.
func (s *Store) batches() (n int64) {
	for _, l := range s.lanes {
		n += l.group.Batches.Load()
	}
	return n
}

func (s *Store) ops() (n int64) {
	for _, l := range s.lanes {
		n += l.group.Ops.Load()
	}
	return n
}

// DefaultBatchSize is the most ops (claims, completions) one transaction
// commits; WithBatch sets another.
const DefaultBatchSize = 128

// WithBatch sets the most ops (claim statements, completions) one
// transaction commits. A size of 1 commits every op in a transaction of its
// own, sent at once by its caller, as a store without group commit does.
// It is also the most items one statement of the batch forms carries
// (batch.go): a larger batch is split into statements. Default:
// DefaultBatchSize.
func WithBatch(size int) Option {
	return func(c *config) { c.batchSize = size }
}

type opKind uint8

const (
	claimOp opKind = iota
	completeOp
)

// op is one claim statement (claimSQL) or completion (completeSQL), with
// what it returned.
type op struct {
	kind opKind
	id   []byte

	// claimOp's arguments.
	random string
	lease  int64 // µs
	digest []byte
	tool   []byte
	// completeOp's.
	token  string
	result []byte
	ttl    int64 // µs

	// What claimSQL returned: claimed says it took the row.
	claimed   bool
	got       string // the claim's token
	attempts  int
	reclaimed bool
	// What completeSQL changed.
	affected int64
}

func (o *op) sql() (string, []any) {
	if o.kind == claimOp {
		return claimSQL, []any{o.id, o.random, o.lease, o.digest, o.tool}
	}
	return completeSQL, []any{o.id, o.token, o.result, o.ttl}
}

// do runs in through the store's group and returns it done, or the error of
// its transaction or its own.
func (s *Store) do(ctx context.Context, in op) (op, error) {
	if s.unbatched {
		err := s.runOne(ctx, &in)
		return in, err
	}
	l := s.lane()
	o := l.group.Do(ctx, in)
	l.ops.Add(-1)
	return o.In, o.Err
}

// lane is one group of a store, with the ops in it (queued or in flight).
type lane struct {
	group *groupcommit.Group[op]
	ops   atomic.Int32
}

// lane picks the lane an op joins and counts the op in it: the first
// holding less than a batch of ops (queued or in flight), else the one with
// the fewest. Two ops may both take a lane's last place, so that a lane
// holds a little more than a batch: the group still sends at most a batch at
// once.
func (s *Store) lane() *lane {
	var best *lane
	fewest := int32(0)
	for _, l := range s.lanes {
		c := l.ops.Load()
		if c < s.batchSize {
			l.ops.Add(1)
			return l
		}
		if best == nil || c < fewest {
			best, fewest = l, c
		}
	}
	best.ops.Add(1)
	return best
}

// runOne runs o's statement alone, in a transaction of its own.
func (s *Store) runOne(ctx context.Context, o *op) error {
	query, args := o.sql()
	if o.kind == claimOp {
		err := s.pool.QueryRow(ctx, query, args...).Scan(&o.got, &o.attempts, &o.reclaimed)
		o.claimed = err == nil
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	}
	tag, err := s.pool.Exec(ctx, query, args...)
	o.affected = tag.RowsAffected()
	return err
}

// runBatch is the group's commit function.
func (s *Store) runBatch(batch []*groupcommit.Op[op]) {
	live := groupcommit.Live(batch)
	switch len(live) {
	case 0:
		return
	case 1:
		live[0].Err = s.runOne(live[0].Ctx, &live[0].In)
		return
	}
	if s.beforeBatch != nil {
		s.beforeBatch()
	}
	// Row locks in id order (the queue's order among equal ids).
	slices.SortStableFunc(live, func(a, b *groupcommit.Op[op]) int { return bytes.Compare(a.In.id, b.In.id) })
	// No caller may end the pipeline, which carries the other callers' ops;
	// it ends when the last of their deadlines has passed.
	ctx, cancel := groupcommit.Context(live)
	defer cancel()
	err := s.sendBatch(ctx, live)
	if err == nil {
		return
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		// The connection or the commit failed: the transaction's outcome is
		// every op's, as for a statement sent alone.
		for _, o := range live {
			o.Err = err
		}
		return
	}
	// A statement failed and rolled the transaction back, every op's with
	// it: run each on its own, so that only the failing one fails.
	for _, o := range live {
		o.Err = s.runOne(o.Ctx, &o.In)
	}
}

// sendBatch sends ops' statements in one pipeline (one implicit
// transaction) and reads every result and the commit. It sets the ops'
// results only if the transaction committed.
func (s *Store) sendBatch(ctx context.Context, ops []*groupcommit.Op[op]) error {
	b := &pgx.Batch{}
	for _, o := range ops {
		query, args := o.In.sql()
		b.Queue(query, args...)
	}
	br := s.pool.SendBatch(ctx, b)
	got := make([]op, len(ops))
	var first error
	for i, o := range ops {
		got[i] = o.In
		g := &got[i]
		if o.In.kind == claimOp {
			err := br.QueryRow().Scan(&g.got, &g.attempts, &g.reclaimed)
			g.claimed = err == nil
			if err != nil && !errors.Is(err, pgx.ErrNoRows) && first == nil {
				first = err
			}
			continue
		}
		tag, err := br.Exec()
		g.affected = tag.RowsAffected()
		if err != nil && first == nil {
			first = err
		}
	}
	// Close reads through the pipeline's end: the commit.
	if err := br.Close(); err != nil && first == nil {
		first = err
	}
	if first != nil {
		return first
	}
	for i, o := range ops {
		o.In = got[i]
	}
	return nil
}
