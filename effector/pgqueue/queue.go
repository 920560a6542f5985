package pgqueue

import (
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
	"github.com/beam-agents/toolreg/internal/groupcommit"
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

// Sink is an effector.Sink writing results to the queue's results table.
// Results published at once share one statement and one commit.
type Sink struct {
	q     *Queue
	group *groupcommit.Group[intent.Result]
}

var _ effector.Sink = (*Sink)(nil)

// publishBatch is the most results one statement writes.
const publishBatch = 256

// Sink returns a results sink of the queue.
func (q *Queue) Sink() *Sink {
	s := &Sink{q: q}
	s.group = groupcommit.New(publishBatch, s.commit)
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
	if err := s.group.Do(ctx, res).Err; err != nil {
		return fmt.Errorf("pgqueue: publishing the result of intent %q on queue %q: %w", res.IntentID, s.q.name, err)
	}
	return nil
}

func (s *Sink) commit(batch []*groupcommit.Op[intent.Result]) {
	// In one order, so that batches writing the same ids at once (duplicate
	// deliveries on two hosts) take their index locks alike.
	slices.SortFunc(batch, func(a, b *groupcommit.Op[intent.Result]) int { return strings.Compare(a.In.IntentID, b.In.IntentID) })
	ids, statuses, rows := make([][]byte, 0, len(batch)), make([]int16, 0, len(batch)), make([][]byte, 0, len(batch))
	var todo []*groupcommit.Op[intent.Result]
	for _, o := range groupcommit.Live(batch) {
		b, err := o.In.AppendBinary(nil)
		if err != nil {
			o.Err = fmt.Errorf("encoding it: %w", err)
			continue
		}
		ids, statuses, rows = append(ids, []byte(o.In.IntentID)), append(statuses, int16(o.In.Status)), append(rows, b)
		todo = append(todo, o)
	}
	if len(todo) == 0 {
		return
	}
	ctx, cancel := groupcommit.Context(todo)
	defer cancel()
	_, err := s.q.pool.Exec(ctx, publishSQL, s.q.name, ids, statuses, rows)
	for _, o := range todo {
		o.Err = err
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
