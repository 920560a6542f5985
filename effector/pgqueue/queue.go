package pgqueue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/pgstore"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/staged"
)

// Channel is the LISTEN/NOTIFY channel Enqueue notifies, with the queue's
// name as the payload, when its transaction commits.
const Channel = "toolreg_queue"

// maxQueueName bounds a queue's name, well inside a notification's payload.
const maxQueueName = 200

// Queue is one named queue in a database migrated by pgstore.Migrate. Many
// queues share the tables; each has its own intents, results and dead
// letters. A Queue is safe for concurrent use.
type Queue struct {
	pool *pgxpool.Pool
	name string
}

// Open returns the queue name in the database pool connects to, which the
// caller owns. The database must be at pgstore.SchemaVersion: Open returns a
// *pgstore.SchemaError saying what to run otherwise.
func Open(ctx context.Context, pool *pgxpool.Pool, name string) (*Queue, error) {
	if pool == nil {
		return nil, errors.New("pgqueue: Open with a nil pool: pass a *pgxpool.Pool from pgxpool.New")
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := pgstore.CheckSchema(ctx, pool); err != nil {
		return nil, err
	}
	return &Queue{pool: pool, name: name}, nil
}

func checkName(name string) error {
	if name == "" || len(name) > maxQueueName || !utf8.ValidString(name) || strings.ContainsRune(name, 0) {
		return fmt.Errorf("pgqueue: queue name %q: want 1 to %d bytes of UTF-8 without NUL", name, maxQueueName)
	}
	return nil
}

// Name returns the queue's name.
func (q *Queue) Name() string { return q.name }

// DB is what Enqueue writes through: a pgx.Tx (the pipeline's transaction,
// for the outbox pattern), a *pgxpool.Pool or a *pgx.Conn.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// enqueueSQL inserts the intents in order and notifies Channel once; the
// notification is delivered when the transaction commits, and not at all if
// it rolls back.
const enqueueSQL = `WITH i AS (INSERT INTO toolreg_queue_intents (queue, intent)
		SELECT $1, b FROM unnest($2::bytea[]) WITH ORDINALITY AS u(b, n) ORDER BY n
		RETURNING 1)
	SELECT pg_notify('` + Channel + `', $1) FROM (SELECT count(*) FROM i) c`

// Enqueue adds intents to the queue named queue through db, in their order,
// as their wire bytes (intent.Intent.AppendBinary). Pass the pipeline's own
// transaction as db, and the intents become visible to effectors, and wake
// them, only when it commits; if it rolls back, nothing was enqueued (the
// outbox pattern). An intent that cannot be encoded fails the call before
// anything is written. The notification takes a lock global to the database
// through the commit, once per transaction: enqueue a step's intents in one
// call.
func Enqueue(ctx context.Context, db DB, queue string, intents ...*intent.Intent) error {
	if err := checkName(queue); err != nil {
		return err
	}
	if len(intents) == 0 {
		return nil
	}
	rows := make([][]byte, len(intents))
	for i, in := range intents {
		if in == nil {
			return fmt.Errorf("pgqueue: enqueueing intent %d of %d: it is nil", i+1, len(intents))
		}
		b, err := in.AppendBinary(nil)
		if err != nil {
			return fmt.Errorf("pgqueue: encoding intent %q: %w", in.ID, err)
		}
		rows[i] = b
	}
	if _, err := db.Exec(ctx, enqueueSQL, queue, rows); err != nil {
		return fmt.Errorf("pgqueue: enqueueing %d intents on queue %q: %w%s", len(intents), queue, err, hint(err))
	}
	return nil
}

// hint says what to do about an error that means the tables are missing.
func hint(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table
		return " (the queue's tables are missing: run pgstore.Migrate(ctx, pool), or toolreg migrate with the database's URL)"
	}
	return ""
}

// Sink is an effector.Sink writing results to the queue's results table. It
// is an effector.StagedSink: the results Serve stages while a write is under
// way, and the results published at once, go together in the next write,
// one statement and one commit. It is safe for concurrent use.
type Sink struct {
	q *Queue
	w *staged.Writer[resultRow]
}

// resultRow is a staged result: its intent id, status and wire bytes.
type resultRow struct {
	id     []byte
	status int16
	bytes  []byte
}

var _ effector.StagedSink = (*Sink)(nil)

// Sink returns a results sink of the queue.
func (q *Queue) Sink() *Sink {
	s := &Sink{q: q}
	s.w = staged.New(s.write)
	return s
}

const publishSQL = `INSERT INTO toolreg_queue_results (queue, intent_id, status, result)
	SELECT $1, i, s, r FROM unnest($2::bytea[], $3::smallint[], $4::bytea[]) AS u(i, s, r)
	ON CONFLICT (queue, intent_id) DO NOTHING`

// Publish writes res as its intent's result, unless one is there already:
// the first result published for an intent id stays (a redelivered intent
// gets the same result from the dedup store). It returns nil once the row is
// committed.
func (s *Sink) Publish(ctx context.Context, res intent.Result) error {
	wait, err := s.Stage(ctx, res)
	if err != nil {
		return err
	}
	return wait()
}

// Stage encodes res and queues it, and returns what waits until its row is
// committed, as Publish would have it (effector.StagedSink). The first wait
// called writes every result staged by then in one statement, all or
// nothing: each wait it covered returns that statement's outcome, and later
// waits of the same statement return at once. A result whose write failed
// and that Serve publishes again adds no second row (the first result for an
// intent id stays). Statements commit in the order their results were
// staged; the rows of one commit at once, written in intent id order (so that
// two hosts writing the same ids at once take their locks alike), which
// their published_at follows.
func (s *Sink) Stage(ctx context.Context, res intent.Result) (wait func() error, err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pgqueue: publishing the result of intent %q on queue %q: %w", res.IntentID, s.q.name, err)
	}
	b, err := res.AppendBinary(nil)
	if err != nil {
		return nil, fmt.Errorf("pgqueue: publishing the result of intent %q on queue %q: encoding it: %w", res.IntentID, s.q.name, err)
	}
	return s.w.Stage(ctx, resultRow{id: []byte(res.IntentID), status: int16(res.Status), bytes: b})
}

// write inserts rows in one statement.
func (s *Sink) write(ctx context.Context, rows []resultRow, errs []error) {
	// In one order, so that statements writing the same ids at once
	// (duplicate deliveries on two hosts) take their index locks alike.
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return bytes.Compare(rows[a].id, rows[b].id) })
	ids, statuses, results := make([][]byte, len(rows)), make([]int16, len(rows)), make([][]byte, len(rows))
	for k, i := range order {
		ids[k], statuses[k], results[k] = rows[i].id, rows[i].status, rows[i].bytes
	}
	_, err := s.q.pool.Exec(ctx, publishSQL, s.q.name, ids, statuses, results)
	if err == nil {
		return
	}
	for i, r := range rows {
		errs[i] = fmt.Errorf("pgqueue: publishing the result of intent %q on queue %q: %w%s", r.id, s.q.name, err, hint(err))
	}
}

// Result returns the result published for intentID, and whether there is one.
func (q *Queue) Result(ctx context.Context, intentID string) (intent.Result, bool, error) {
	var b []byte
	err := q.pool.QueryRow(ctx, `SELECT result FROM toolreg_queue_results WHERE queue = $1 AND intent_id = $2`, q.name, []byte(intentID)).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return intent.Result{}, false, nil
	}
	if err != nil {
		return intent.Result{}, false, fmt.Errorf("pgqueue: reading the result of intent %q on queue %q: %w", intentID, q.name, err)
	}
	var r intent.Result
	if err := r.UnmarshalBinary(b); err != nil {
		return intent.Result{}, false, fmt.Errorf("pgqueue: the result of intent %q on queue %q: %w", intentID, q.name, err)
	}
	return r, true, nil
}

const deadSQL = `INSERT INTO toolreg_queue_dead (queue, intent_id, intent, reason, deliveries) VALUES ($1, $2, $3, $4, $5)`

// DeadLetter is an effector.DeadLetterFunc keeping the intents the effector
// refuses (a bad signature, a malformed intent) or gives up (past
// effector.WithMaxAttempts, with a *effector.PoisonError, whose attempts it
// records as the deliveries) in the queue's dead-letter table, with the
// reason. Pass it to effector.WithDeadLetter. An intent may be dead-lettered
// twice (a redelivery after a crash between this and the acknowledgement).
func (q *Queue) DeadLetter(ctx context.Context, in *intent.Intent, reason error) error {
	b, err := in.AppendBinary(nil)
	if err != nil {
		return fmt.Errorf("pgqueue: encoding dead intent %q: %w", in.ID, err)
	}
	var deliveries *int
	if pe := (*effector.PoisonError)(nil); errors.As(reason, &pe) {
		deliveries = &pe.Attempts
	}
	if _, err := q.pool.Exec(ctx, deadSQL, q.name, []byte(in.ID), b, reason.Error(), deliveries); err != nil {
		return fmt.Errorf("pgqueue: dead-lettering intent %q on queue %q: %w", in.ID, q.name, err)
	}
	return nil
}

var _ effector.DeadLetterFunc = (*Queue)(nil).DeadLetter

// DeadLetter is a row of the dead-letter table.
type DeadLetter struct {
	ID         int64
	IntentID   string // "" when the bytes are no intent
	Bytes      []byte // the intent's wire bytes, or the row's bytes as enqueued
	Reason     string
	Deliveries int // 0 when unknown
}

// DeadLetters returns the queue's dead letters, oldest first.
func (q *Queue) DeadLetters(ctx context.Context) ([]DeadLetter, error) {
	rows, err := q.pool.Query(ctx, `SELECT id, coalesce(intent_id, ''), intent, reason, coalesce(deliveries, 0)
		FROM toolreg_queue_dead WHERE queue = $1 ORDER BY id`, q.name)
	if err != nil {
		return nil, fmt.Errorf("pgqueue: reading the dead letters of queue %q: %w", q.name, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeadLetter, error) {
		var d DeadLetter
		var id []byte
		err := r.Scan(&d.ID, &id, &d.Bytes, &d.Reason, &d.Deliveries)
		d.IntentID = string(id)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgqueue: reading the dead letters of queue %q: %w", q.name, err)
	}
	return out, nil
}

// purgeSQL deletes one batch of the queue's results published before the
// cutoff, skipping rows another purge has locked.
const purgeSQL = `DELETE FROM toolreg_queue_results r USING (
		SELECT queue, intent_id FROM toolreg_queue_results
		WHERE queue = $1 AND published_at < clock_timestamp() - $2 * interval '1 microsecond'
		LIMIT $3 FOR UPDATE SKIP LOCKED) old
	WHERE r.queue = old.queue AND r.intent_id = old.intent_id`

// purgeBatch is the most results one purge statement deletes, which bounds
// how long it holds their locks.
const purgeBatch = 1000

// PurgeResults deletes the queue's results published more than olderThan ago
// (by the server's clock), in batches of at most 1000 rows, and returns how
// many it deleted. Results are kept until purged: a pipeline must have read
// a result before it goes, and an intent delivered again after its result
// was purged gets it published again from the dedup store while the store
// keeps it. Several processes may purge at once. Dead letters are never
// purged: delete them by hand once handled.
func (q *Queue) PurgeResults(ctx context.Context, olderThan time.Duration) (int64, error) {
	if olderThan < 0 {
		return 0, fmt.Errorf("pgqueue: PurgeResults(%v): want zero or more", olderThan)
	}
	var total int64
	for {
		tag, err := q.pool.Exec(ctx, purgeSQL, q.name, micros(olderThan), purgeBatch)
		if err != nil {
			return total, fmt.Errorf("pgqueue: purging the results of queue %q: %w", q.name, err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < purgeBatch {
			return total, nil
		}
	}
}
