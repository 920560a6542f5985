package pgqueue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/groupcommit"
	"github.com/beam-agents/toolreg/internal/handedout"
)

// Defaults of the options below.
const (
	// DefaultLease is how long a claimed intent stays invisible to other
	// consumers. Keep it above the time an intent takes to run, record,
	// publish and acknowledge (and above Serve's drain timeout), or a live
	// consumer's intents are delivered again meanwhile: harmless, since the
	// dedup store answers them, but each then waits for the first.
	DefaultLease = time.Minute
	// DefaultPollInterval is the longest an idle Source waits before it
	// looks for intents again without a notification: what finds intents
	// whose lease ran out, and all a Source does while its listening
	// connection is down.
	DefaultPollInterval = time.Second
	// DefaultBatch is how many intents one claim takes.
	DefaultBatch = 8
)

// listenRetry is how long the listener waits before it connects again after
// its connection failed; the Source polls meanwhile.
const listenRetry = time.Second

// Option configures Queue.NewSource.
type Option func(*Source)

// WithLease sets how long a claimed intent stays invisible to other
// consumers before it is delivered again. Default: DefaultLease.
func WithLease(d time.Duration) Option { return func(s *Source) { s.lease = d } }

// WithPollInterval sets the longest an idle Source waits without a
// notification before it claims again. Default: DefaultPollInterval.
func WithPollInterval(d time.Duration) Option { return func(s *Source) { s.poll = d } }

// WithBatch sets how many intents one claim takes. Claimed intents not yet
// handed out count a delivery and wait out their lease if the process dies;
// Close gives them back, and so does Receive, claiming afresh, when half
// their lease passed before a worker was free to take them. Default:
// DefaultBatch.
func WithBatch(n int) Option { return func(s *Source) { s.batch = n } }

// WithLogger sets where the Source reports claims it retries after a lost
// connection (level Warn). Default: slog.Default().
func WithLogger(l *slog.Logger) Option { return func(s *Source) { s.log = l } }

// Source is an effector.Source claiming intents from a Queue. It is not safe
// for concurrent Receive calls (Serve makes one at a time); acknowledgements
// may come from any goroutine. Close it after Serve returns.
type Source struct {
	q     *Queue
	lease time.Duration
	poll  time.Duration
	batch int
	log   *slog.Logger

	buf       []row     // claimed, not yet handed out
	claimedAt time.Time // when buf was claimed, by this host's clock
	acks      *groupcommit.Group[ackIn]
	claims    handedout.Table[ackIn] // the intents handed out, until acknowledged: row and claim token

	wake      chan struct{} // a notification (or a lost connection) since the last claim
	startOnce sync.Once
	cancel    context.CancelFunc
	done      chan struct{}
}

var (
	_ effector.Source     = (*Source)(nil)
	_ effector.BatchAcker = (*Source)(nil)
)

type row struct {
	id, token  int64
	deliveries int
	bytes      []byte
}

// NewSource returns a Source claiming the queue's intents.
func (q *Queue) NewSource(opts ...Option) (*Source, error) {
	s := &Source{q: q, lease: DefaultLease, poll: DefaultPollInterval, batch: DefaultBatch, log: slog.Default(), wake: make(chan struct{}, 1)}
	for _, o := range opts {
		o(s)
	}
	var ps []string
	if s.lease <= 0 {
		ps = append(ps, fmt.Sprintf("WithLease(%v): want a positive duration", s.lease))
	}
	if s.poll <= 0 {
		ps = append(ps, fmt.Sprintf("WithPollInterval(%v): want a positive duration", s.poll))
	}
	if s.batch <= 0 {
		ps = append(ps, fmt.Sprintf("WithBatch(%d): want at least 1", s.batch))
	}
	if s.log == nil {
		ps = append(ps, "WithLogger(nil): pass a logger, or slog.New(slog.DiscardHandler) for none")
	}
	if len(ps) > 0 {
		return nil, fmt.Errorf("pgqueue: NewSource: %s", strings.Join(ps, "; "))
	}
	s.acks = groupcommit.New(ackBatch, s.commitAcks)
	return s, nil
}

// claimSQL leases up to $2 visible intents of queue $1, oldest first,
// skipping rows another claim has locked, so concurrent consumers never wait
// on each other nor take the same row. A row is visible when it was never
// claimed or its lease ($3 microseconds, by the server's clock) ran out.
const claimSQL = `WITH c AS (SELECT id FROM toolreg_queue_intents
		WHERE queue = $1 AND visible_at <= clock_timestamp()
		ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
	UPDATE toolreg_queue_intents q
	SET visible_at = clock_timestamp() + $3 * interval '1 microsecond', deliveries = q.deliveries + 1, token = nextval('toolreg_queue_fence')
	FROM c WHERE q.id = c.id
	RETURNING q.id, q.token, q.deliveries, q.intent`

// Receive returns the next intent for this consumer, claiming a batch when it
// has none: it blocks until there is one or ctx ends. A queue has no end, so
// it never returns io.EOF. Connection failures are retried every poll
// interval; it returns an error the server reports about the statement (the
// tables are missing, say), which stops Serve.
func (s *Source) Receive(ctx context.Context) (effector.Delivery, error) {
	s.startOnce.Do(s.startListener)
	for {
		if len(s.buf) > 0 && time.Since(s.claimedAt) > s.lease/2 {
			// The workers were slow to take these: half their lease is gone,
			// and another consumer may soon be handed them too. Give them
			// back, uncounted, and claim afresh.
			if err := s.release(ctx); err != nil && ctx.Err() == nil && !transient(err) {
				return effector.Delivery{}, err
			}
		}
		if len(s.buf) > 0 {
			r := s.buf[0]
			s.buf = s.buf[1:]
			return s.delivery(r), nil
		}
		if err := ctx.Err(); err != nil {
			return effector.Delivery{}, err
		}
		select { // a notification from now on means: claim again
		case <-s.wake:
		default:
		}
		err := s.claim(ctx)
		if err != nil && ctx.Err() == nil {
			if !transient(err) {
				return effector.Delivery{}, fmt.Errorf("pgqueue: claiming intents of queue %q: %w%s", s.q.name, err, hint(err))
			}
			s.log.WarnContext(ctx, "pgqueue: claiming intents failed; retrying", "queue", s.q.name, "error", err.Error(), "retry_in", s.poll)
		}
		if len(s.buf) > 0 {
			continue
		}
		t := time.NewTimer(s.poll)
		select {
		case <-s.wake:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
}

// ReceiveBatch implements effector.BatchSource: it waits for an intent as
// Receive does (claiming a batch when it has none), then appends to buf
// those of the batch it has not handed out, at most max.
func (s *Source) ReceiveBatch(ctx context.Context, max int, buf []effector.Delivery) ([]effector.Delivery, error) {
	d, err := s.Receive(ctx)
	if err != nil {
		return buf, err
	}
	buf = append(buf, d)
	for len(s.buf) > 0 && max > 1 {
		buf = append(buf, s.delivery(s.buf[0]))
		s.buf = s.buf[1:]
		max--
	}
	return buf, nil
}

var _ effector.BatchSource = (*Source)(nil)

func (s *Source) claim(ctx context.Context) error {
	start := time.Now()
	rows, err := s.q.pool.Query(ctx, claimSQL, s.q.name, s.batch, micros(s.lease))
	if err != nil {
		return err
	}
	buf, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.id, &x.token, &x.deliveries, &x.bytes)
		return x, err
	})
	if err != nil {
		return err
	}
	slices.SortFunc(buf, func(a, b row) int { return cmp.Compare(a.id, b.id) })
	s.buf, s.claimedAt = buf, start
	return nil
}

// transient says whether err is a lost connection or a server going down
// (retry), rather than an error about the statement itself (report it).
func transient(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// 08: connection exception; 57P: operator intervention (shutdown,
		// pg_terminate_backend); 40: serialization failure or deadlock.
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P") || strings.HasPrefix(pe.Code, "40")
	}
	// The driver's own failures, by type: a socket error, a connection pgx
	// closed, a server that hung up mid-message. Never by the error's text,
	// which a statement's or a caller's message could share.
	var ne net.Error
	return errors.As(err, &ne) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// micros is d in whole microseconds, Postgres's resolution, rounded up.
func micros(d time.Duration) int64 { return int64((d + time.Microsecond - 1) / time.Microsecond) }

// ackSQL deletes a batch of acknowledged rows, each only where its claim's
// token still holds. Concurrent acknowledgements share one statement and one
// commit (a group commit): with Serve's workers finishing at once, most of a
// row's cost is its commit.
//
// It matches ids and tokens as two sets, not as pairs, which is exact: a
// token is one nextval of toolreg_queue_fence, given to one row's claim, so
// a row of these ids holding one of these tokens holds its own. And it finds
// its rows by their key in any plan: joined to unnest of the pairs, the
// generic plan Postgres keeps for a prepared statement after five runs,
// made while the table was small, read the whole table for every batch
// (TestAQueueFindsItsRowsByTheKeyAfterTheTableGrew). releaseSQL likewise.
const ackSQL = `DELETE FROM toolreg_queue_intents q
	WHERE q.id = ANY($1::bigint[]) AND q.token = ANY($2::bigint[])`

// ackBatch is the most acknowledgements one statement takes.
const ackBatch = 256

type ackIn struct{ id, token int64 }

func (s *Source) commitAcks(batch []*groupcommit.Op[ackIn]) {
	batch = groupcommit.Live(batch)
	if len(batch) == 0 {
		return
	}
	slices.SortFunc(batch, func(a, b *groupcommit.Op[ackIn]) int { return cmp.Compare(a.In.id, b.In.id) })
	ids, tokens := make([]int64, len(batch)), make([]int64, len(batch))
	for i, o := range batch {
		ids[i], tokens[i] = o.In.id, o.In.token
	}
	ctx, cancel := groupcommit.Context(batch)
	defer cancel()
	_, err := s.q.pool.Exec(ctx, ackSQL, ids, tokens)
	for _, o := range batch {
		o.Err = err
	}
}

// ackDeadSQL moves a row that is no intent to the dead-letter table.
const ackDeadSQL = `WITH d AS (DELETE FROM toolreg_queue_intents WHERE id = $1 AND token = $2
		RETURNING queue, intent, deliveries, enqueued_at)
	INSERT INTO toolreg_queue_dead (queue, intent_id, intent, reason, deliveries, enqueued_at)
	SELECT queue, NULL, intent, $3, deliveries, enqueued_at FROM d`

func (s *Source) delivery(r row) effector.Delivery {
	pos := fmt.Sprintf("%s/%d", s.q.name, r.id)
	d := effector.Delivery{Pos: pos, Offset: -1, Deliveries: r.deliveries}
	in := new(intent.Intent)
	err := in.UnmarshalBinary(r.bytes)
	if err == nil && in.ID == "" {
		err = errors.New("it has no intent_id, so it cannot be answered (enqueue intents with pgqueue.Enqueue)")
	}
	if err != nil {
		d.Err = fmt.Errorf("pgqueue: row %s (%d bytes) is no intent: %w", pos, len(r.bytes), err)
		d.Bytes = r.bytes
		reason := d.Err.Error()
		// Acknowledging it keeps it: the row moves to the dead-letter table.
		d.Ack = func(ctx context.Context) error {
			if _, err := s.q.pool.Exec(ctx, ackDeadSQL, r.id, r.token, reason); err != nil {
				return fmt.Errorf("pgqueue: moving row %s to the dead letters: %w", pos, err)
			}
			return nil
		}
		return d
	}
	d.Intent, d.Acker = in, s
	s.claims.Put(in, ackIn{r.id, r.token})
	// A row whose token changed was taken over after this lease ran out: its
	// new owner acknowledges it, so deleting nothing is no error.
	d.Ack = func(ctx context.Context) error {
		if err := s.acks.Do(ctx, ackIn{r.id, r.token}).Err; err != nil {
			return fmt.Errorf("pgqueue: acknowledging row %s (intent %q): %w", pos, in.ID, err)
		}
		s.claims.Delete(in)
		return nil
	}
	return d
}

// AckBatch implements effector.BatchAcker: it deletes the rows of every
// delivery in ds with one statement and one commit, each row only where
// its claim's token still holds, as Ack does (a row taken over after its
// lease ran out is its new owner's to acknowledge, so deleting nothing is no
// error; deleting it twice neither). It refuses a batch holding a delivery
// this Source did not hand out or has acknowledged already, deleting none
// of it (Serve then acknowledges each with its Ack).
func (s *Source) AckBatch(ctx context.Context, ds []effector.Delivery) error {
	rows := make([]ackIn, 0, len(ds))
	for _, d := range ds {
		r, ok := s.claims.Get(d.Intent)
		if !ok {
			return fmt.Errorf("pgqueue: AckBatch was given %s, which this source (queue %q) did not hand out or has acknowledged already: acknowledge it with its own Ack", d.Pos, s.q.name)
		}
		rows = append(rows, r)
	}
	// In id order, as the group commit does, so that concurrent deletes
	// lock rows in one order.
	slices.SortFunc(rows, func(a, b ackIn) int { return cmp.Compare(a.id, b.id) })
	ids, tokens := make([]int64, len(rows)), make([]int64, len(rows))
	for i, r := range rows {
		ids[i], tokens[i] = r.id, r.token
	}
	if _, err := s.q.pool.Exec(ctx, ackSQL, ids, tokens); err != nil {
		return fmt.Errorf("pgqueue: acknowledging %d rows of queue %q: %w", len(rows), s.q.name, err)
	}
	for _, d := range ds {
		s.claims.Delete(d.Intent)
	}
	return nil
}

const releaseSQL = `UPDATE toolreg_queue_intents q
	SET visible_at = clock_timestamp(), deliveries = q.deliveries - 1, token = NULL
	WHERE q.id = ANY($1::bigint[]) AND q.token = ANY($2::bigint[])`

// Close stops the Source's listening connection and gives back the intents
// it claimed and never handed out, visible at once and with their delivery
// uncounted. Call it after Serve returns, with a context that has not ended
// (Serve's has, at shutdown: use context.WithoutCancel).
func (s *Source) Close(ctx context.Context) error {
	s.startOnce.Do(func() {}) // a Source never received from starts nothing
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	s.claims.Clear() // deliveries left unanswered: their leases lapse
	return s.release(ctx)
}

// release gives back the claimed rows not handed out.
func (s *Source) release(ctx context.Context) error {
	if len(s.buf) == 0 {
		return nil
	}
	ids, tokens := make([]int64, len(s.buf)), make([]int64, len(s.buf))
	for i, r := range s.buf {
		ids[i], tokens[i] = r.id, r.token
	}
	s.buf = nil
	if _, err := s.q.pool.Exec(ctx, releaseSQL, ids, tokens); err != nil {
		return fmt.Errorf("pgqueue: giving back %d unhandled intents of queue %q: %w (they come back when their lease ends)", len(ids), s.q.name, err)
	}
	return nil
}

func (s *Source) startListener() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go s.listen(ctx)
}

func (s *Source) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// listen holds a connection of its own LISTENing on Channel and signals
// wake on each notification for this queue; after it loses the connection
// it signals too (notifications may have been lost) and dials again.
func (s *Source) listen(ctx context.Context) {
	defer close(s.done)
	for ctx.Err() == nil {
		s.listenOnce(ctx)
		s.signal()
		t := time.NewTimer(listenRetry)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

func (s *Source) listenOnce(ctx context.Context) {
	conn, err := pgx.ConnectConfig(ctx, s.q.pool.Config().ConnConfig.Copy())
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return
	}
	// Intents enqueued before LISTEN took effect notified no one: claim.
	s.signal()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return
		}
		if n.Payload == s.q.name {
			s.signal()
		}
	}
}
