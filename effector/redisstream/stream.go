package redisstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/handedout"
	"github.com/beam-agents/toolreg/internal/staged"
)

// The fields of stream entries.
const (
	IntentField   = "intent"    // an intents entry: the intent's JSON form
	ResultField   = "result"    // a results entry: the result's JSON form
	IntentIDField = "intent_id" // a results entry: the result's intent id
)

// Defaults of the options below.
const (
	// DefaultReclaimIdle is how long an entry must sit unacknowledged in
	// another consumer's pending list before this one takes it over. Keep it
	// above the time an intent takes to run, record and publish, or live
	// consumers will have entries taken from them (harmless, but each one then
	// runs through the store twice).
	DefaultReclaimIdle = time.Minute
	// DefaultBlock is the longest one XREADGROUP waits for new entries; it
	// bounds how long Receive takes to notice its context end.
	DefaultBlock = time.Second
	// DefaultBatch is how many entries one read fetches.
	DefaultBatch = 16
)

// Source is an effector.Source reading intents from a Redis stream as one
// consumer of a consumer group. It is not safe for concurrent Receive calls
// (Serve makes one at a time); acknowledgements may come from any goroutine.
// It is an effector.BatchAcker: Serve acknowledges its deliveries in
// batches, one XACK each. It remembers the entry id of each intent it hands
// out until the intent is acknowledged; one a Serve left unanswered is
// remembered until the Source is dropped (its entry is delivered again with
// an intent of its own).
type Source struct {
	rdb                     redis.UniversalClient
	stream, group, consumer string
	reclaimIdle, block      time.Duration
	batch                   int64

	buf         []redis.XMessage
	counts      map[string]int64 // delivery counts of buf's entries, when redelivered
	ownCursor   string           // where the read of our own pending entries is; "" when done
	claimCursor string           // XAUTOCLAIM's cursor through the group's pending list
	nextClaim   time.Time

	ids handedout.Table[string] // entry ids of the intents handed out, until acknowledged
}

var (
	_ effector.Source     = (*Source)(nil)
	_ effector.BatchAcker = (*Source)(nil)
)

// Option configures NewSource.
type Option func(*Source)

// WithReclaimIdle sets how long an entry stays unacknowledged in another
// consumer's pending list before this consumer reclaims it (XAUTOCLAIM); the
// pending list is swept at most every quarter of that. Default:
// DefaultReclaimIdle.
func WithReclaimIdle(d time.Duration) Option {
	return func(s *Source) { s.reclaimIdle = d }
}

// WithBlock sets the longest one read waits for new entries. Default:
// DefaultBlock.
func WithBlock(d time.Duration) Option {
	return func(s *Source) { s.block = d }
}

// WithBatch sets how many entries one read fetches. Entries fetched but not
// yet handed out when the source stops stay pending and are reclaimed.
// Default: DefaultBatch.
func WithBatch(n int) Option {
	return func(s *Source) { s.batch = int64(n) }
}

// NewSource reads intents from stream as consumer of group, creating the
// group (and the stream) if they do not exist, reading from the stream's
// start, so that no intent added before the group existed is missed.
// Consumer names must be unique among live consumers of the group; reuse one
// across restarts of the same effector so that it takes back its own pending
// entries at once.
func NewSource(ctx context.Context, rdb redis.UniversalClient, stream, group, consumer string, opts ...Option) (*Source, error) {
	s := &Source{rdb: rdb, stream: stream, group: group, consumer: consumer,
		reclaimIdle: DefaultReclaimIdle, block: DefaultBlock, batch: DefaultBatch,
		ownCursor: "0", claimCursor: "0-0"}
	for _, o := range opts {
		o(s)
	}
	var ps []string
	if rdb == nil {
		ps = append(ps, "the redis client is nil")
	}
	if stream == "" || group == "" || consumer == "" {
		ps = append(ps, fmt.Sprintf("stream %q, group %q and consumer %q must all be named", stream, group, consumer))
	}
	if s.reclaimIdle <= 0 {
		ps = append(ps, fmt.Sprintf("WithReclaimIdle(%v): want a positive duration", s.reclaimIdle))
	}
	if s.block <= 0 {
		ps = append(ps, fmt.Sprintf("WithBlock(%v): want a positive duration (a zero BLOCK waits forever)", s.block))
	}
	if s.batch <= 0 {
		ps = append(ps, fmt.Sprintf("WithBatch(%d): want at least 1", s.batch))
	}
	if len(ps) > 0 {
		return nil, fmt.Errorf("redisstream: NewSource: %s", strings.Join(ps, "; "))
	}
	err := rdb.XGroupCreateMkStream(ctx, stream, group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return nil, fmt.Errorf("redisstream: creating consumer group %q of stream %q: %w", group, stream, err)
	}
	return s, nil
}

// Receive returns the next intent for this consumer: first its own entries
// left pending by an earlier run, then entries other consumers left pending
// longer than the reclaim idle time, then new entries. It blocks until there
// is one or ctx ends; a stream has no end, so it never returns io.EOF.
func (s *Source) Receive(ctx context.Context) (effector.Delivery, error) {
	for {
		if len(s.buf) > 0 {
			m := s.buf[0]
			s.buf = s.buf[1:]
			return s.delivery(m), nil
		}
		if err := ctx.Err(); err != nil {
			return effector.Delivery{}, err
		}
		var err error
		switch {
		case s.ownCursor != "":
			err = s.readOwnPending(ctx)
		case !time.Now().Before(s.nextClaim):
			err = s.reclaim(ctx)
		default:
			err = s.readNew(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return effector.Delivery{}, ctx.Err()
			}
			return effector.Delivery{}, err
		}
	}
}

// ReceiveBatch implements effector.BatchSource: it waits for entries as
// Receive does, then appends to buf those already read (a read fetches up
// to WithBatch entries), at most max.
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

// readOwnPending reads the entries delivered to this consumer name and never
// acknowledged: a restarted effector's unfinished work.
func (s *Source) readOwnPending(ctx context.Context) error {
	res, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: s.group, Consumer: s.consumer, Streams: []string{s.stream, s.ownCursor}, Count: s.batch,
	}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("redisstream: reading pending entries of consumer %q on %q: %w", s.consumer, s.stream, err)
	}
	var ms []redis.XMessage
	if len(res) > 0 {
		ms = res[0].Messages
	}
	if len(ms) == 0 {
		s.ownCursor = ""
		return nil
	}
	s.ownCursor = ms[len(ms)-1].ID
	s.buf = ms
	return s.readCounts(ctx)
}

// readCounts reads the delivery counts of the redelivered entries in buf
// from the group's pending list, for effector.WithMaxAttempts: an entry
// whose processing kills the effector each time is redelivered without end.
func (s *Source) readCounts(ctx context.Context) error {
	clear(s.counts)
	if len(s.buf) == 0 {
		return nil
	}
	ps, err := s.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: s.stream, Group: s.group, Start: s.buf[0].ID, End: s.buf[len(s.buf)-1].ID, Count: int64(len(s.buf)), Consumer: s.consumer,
	}).Result()
	if err != nil {
		return fmt.Errorf("redisstream: reading the delivery counts of %q: %w", s.stream, err)
	}
	if s.counts == nil {
		s.counts = make(map[string]int64, len(ps))
	}
	for _, p := range ps {
		s.counts[p.ID] = p.RetryCount
	}
	return nil
}

// reclaim takes over a batch of entries that other consumers left pending
// longer than the reclaim idle time. After a full sweep of the pending list
// it waits a quarter of the idle time before sweeping again.
func (s *Source) reclaim(ctx context.Context) error {
	ms, next, err := s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: s.stream, Group: s.group, Consumer: s.consumer,
		MinIdle: s.reclaimIdle, Start: s.claimCursor, Count: s.batch,
	}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("redisstream: reclaiming idle entries of %q: %w", s.stream, err)
	}
	if next == "" || next == "0-0" {
		s.claimCursor = "0-0"
		s.nextClaim = time.Now().Add(s.reclaimIdle / 4)
	} else {
		s.claimCursor = next
	}
	s.buf = ms
	return s.readCounts(ctx)
}

// readNew waits up to the block time for entries never delivered to anyone.
func (s *Source) readNew(ctx context.Context) error {
	block := min(s.block, max(time.Until(s.nextClaim), time.Millisecond))
	res, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: s.group, Consumer: s.consumer, Streams: []string{s.stream, ">"}, Count: s.batch, Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil // nothing new within the block time
	}
	if err != nil {
		return fmt.Errorf("redisstream: reading %q as consumer %q of group %q: %w", s.stream, s.consumer, s.group, err)
	}
	if len(res) > 0 {
		s.buf = res[0].Messages
	}
	clear(s.counts) // first deliveries
	return nil
}

func (s *Source) delivery(m redis.XMessage) effector.Delivery {
	id := m.ID
	var in *intent.Intent // set below when the entry is an intent
	d := effector.Delivery{
		Pos:        s.stream + "/" + id,
		Offset:     -1,
		Deliveries: 1,
		Ack: func(ctx context.Context) error {
			if err := s.rdb.XAck(ctx, s.stream, s.group, id).Err(); err != nil {
				return fmt.Errorf("redisstream: acknowledging %s/%s: %w", s.stream, id, err)
			}
			if in != nil {
				s.ids.Delete(in)
			}
			return nil
		},
	}
	if n := s.counts[id]; n > 0 {
		d.Deliveries = int(n)
	}
	raw, ok := m.Values[IntentField].(string)
	if !ok {
		d.Bytes = fmt.Appendf(nil, "%v", m.Values)
		d.Err = fmt.Errorf("redisstream: entry %s has no field %q: it is no intent (write intents with redisstream.Add)", d.Pos, IntentField)
		return d
	}
	dec := new(intent.Intent)
	if err := dec.UnmarshalJSON([]byte(raw)); err != nil {
		d.Bytes = []byte(raw)
		d.Err = fmt.Errorf("redisstream: entry %s, field %q: %w", d.Pos, IntentField, err)
		return d
	}
	in, d.Intent, d.Acker = dec, dec, s
	s.ids.Put(in, id)
	return d
}

// AckBatch implements effector.BatchAcker: it acknowledges every delivery
// of ds with one XACK of all their entry ids (a Source reads one stream as
// one group, so one command covers them). It refuses a batch holding a
// delivery this Source did not hand out or has acknowledged already,
// acknowledging none of it (Serve then acknowledges each with its Ack).
// Acknowledging an entry twice is harmless: XACK skips one no longer
// pending.
func (s *Source) AckBatch(ctx context.Context, ds []effector.Delivery) error {
	ids := make([]string, 0, len(ds))
	for _, d := range ds {
		id, ok := s.ids.Get(d.Intent)
		if !ok {
			return fmt.Errorf("redisstream: AckBatch was given %s, which this source (stream %q, group %q) did not hand out or has acknowledged already: acknowledge it with its own Ack", d.Pos, s.stream, s.group)
		}
		ids = append(ids, id)
	}
	if err := s.rdb.XAck(ctx, s.stream, s.group, ids...).Err(); err != nil {
		return fmt.Errorf("redisstream: acknowledging %d entries of %q: %w", len(ids), s.stream, err)
	}
	for _, d := range ds {
		s.ids.Delete(d.Intent)
	}
	return nil
}

// Add appends in to the intents stream and returns the entry's id.
func Add(ctx context.Context, rdb redis.UniversalClient, stream string, in *intent.Intent) (string, error) {
	b, err := in.MarshalJSON()
	if err != nil {
		return "", fmt.Errorf("redisstream: encoding intent %q: %w", in.ID, err)
	}
	id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []any{IntentField, string(b)}}).Result()
	if err != nil {
		return "", fmt.Errorf("redisstream: adding intent %q to %q: %w", in.ID, stream, err)
	}
	return id, nil
}

// Sink is an effector.Sink appending results to a Redis stream. It is an
// effector.StagedSink: the results Serve stages while a write is under way
// go together in the next one, one pipeline of XADDs. It is safe for
// concurrent use.
type Sink struct {
	rdb    redis.UniversalClient
	stream string
	w      *staged.Writer[entry]
}

// entry is a staged result: its intent id and JSON form.
type entry struct{ id, result string }

var _ effector.StagedSink = (*Sink)(nil)

// NewSink appends results to stream.
func NewSink(rdb redis.UniversalClient, stream string) *Sink {
	s := &Sink{rdb: rdb, stream: stream}
	s.w = staged.New(s.write)
	return s
}

// Publish appends res to the results stream (XADD). It returns nil once Redis
// has the entry, which is as durable as the server's persistence settings
// make it (appendfsync always: on disk).
func (s *Sink) Publish(ctx context.Context, res intent.Result) error {
	wait, err := s.Stage(ctx, res)
	if err != nil {
		return err
	}
	return wait()
}

// Stage encodes res and queues it, and returns what waits until Redis has
// its entry, as Publish would have it (effector.StagedSink). The first wait
// called appends every result staged by then, in staged order, in one
// pipeline; each wait it covered returns its own XADD's outcome, and later
// waits of the same pipeline return at once. When a connection fails part
// way, some entries of the pipeline may be in the stream though their waits
// fail: Serve publishes those results again, and the stream holds them
// twice, which consumers deduplicating by intent id already tolerate.
func (s *Sink) Stage(ctx context.Context, res intent.Result) (wait func() error, err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redisstream: publishing the result of intent %q to %q: %w", res.IntentID, s.stream, err)
	}
	b, err := res.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("redisstream: encoding the result of intent %q: %w", res.IntentID, err)
	}
	return s.w.Stage(ctx, entry{id: res.IntentID, result: string(b)})
}

// write appends es to the stream in one pipeline.
func (s *Sink) write(ctx context.Context, es []entry, errs []error) {
	cmds := make([]*redis.StringCmd, len(es))
	pipe := s.rdb.Pipeline()
	for i, e := range es {
		cmds[i] = pipe.XAdd(ctx, &redis.XAddArgs{Stream: s.stream, Values: []any{IntentIDField, e.id, ResultField, e.result}})
	}
	_, _ = pipe.Exec(ctx) // each command holds its own error
	for i, c := range cmds {
		if err := c.Err(); err != nil {
			errs[i] = fmt.Errorf("redisstream: publishing the result of intent %q to %q: %w", es[i].id, s.stream, err)
		}
	}
}

// Results reads every result in the results stream, in order: a helper for
// consumers that read it whole, and for tests.
func Results(ctx context.Context, rdb redis.UniversalClient, stream string) ([]intent.Result, error) {
	var out []intent.Result
	start := "-"
	for {
		ms, err := rdb.XRangeN(ctx, stream, start, "+", 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("redisstream: reading %q: %w", stream, err)
		}
		for _, m := range ms {
			raw, ok := m.Values[ResultField].(string)
			if !ok {
				return nil, fmt.Errorf("redisstream: entry %s/%s has no field %q: it is no result", stream, m.ID, ResultField)
			}
			var r intent.Result
			if err := r.UnmarshalJSON([]byte(raw)); err != nil {
				return nil, fmt.Errorf("redisstream: entry %s/%s, field %q: %w", stream, m.ID, ResultField, err)
			}
			out = append(out, r)
		}
		if len(ms) < 1000 {
			return out, nil
		}
		start = "(" + ms[len(ms)-1].ID
	}
}
