package natsstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/handedout"
)

// Defaults of the source's options.
const (
	// DefaultConsumer names the durable consumer effectors share.
	DefaultConsumer = "effectors"
	// DefaultAckWait is how long the server waits for an acknowledgement
	// (or an in-progress signal) of a delivered intent before it delivers
	// the intent again, to any effector.
	DefaultAckWait = 30 * time.Second
	// MinAckWait is the shortest AckWait NewSource takes: a source signals
	// progress every third of it, and a loaded machine can hold a goroutine
	// off the processor for hundreds of milliseconds.
	MinAckWait = time.Second
	// DefaultLease is the claim lease NewSource checks AckWait against:
	// the effector's default.
	DefaultLease = effector.DefaultLease
	// DefaultBatch is how many intents one fetch takes at most.
	DefaultBatch = 32
	// DefaultFetchWait is the longest one fetch waits for an intent; it
	// bounds how long Receive takes to notice a lost consumer leader.
	DefaultFetchWait = time.Second
	// DefaultMaxDeliver is how many deliveries of one intent the source
	// hands to Serve; the next one goes to the dead letters. It is twice
	// the effector's DefaultMaxAttempts, so the effector, which records an
	// ERROR result, gives a poison intent up first.
	DefaultMaxDeliver = 2 * effector.DefaultMaxAttempts
)

// deadLetterTries is how many deliveries past WithMaxDeliver the server
// makes, so that a source has that many tries at moving the intent to the
// dead letters before the server stops delivering it.
const deadLetterTries = 3

// Option configures Queue.NewSource.
type Option func(*Source)

// WithConsumer names the durable consumer: effectors that share a name
// share the intents, each delivered to one of them. Default:
// DefaultConsumer.
func WithConsumer(name string) Option { return func(s *Source) { s.consumer = name } }

// WithAckWait sets how long the server waits for an acknowledgement or an
// in-progress signal before it delivers an intent again; see Source for the
// rule that binds it to the lease. Default: DefaultAckWait.
func WithAckWait(d time.Duration) Option { return func(s *Source) { s.ackWait = d } }

// WithLease tells the source the effector's claim lease, which NewSource
// checks AckWait against: pass the effector's, e.Lease(). Default:
// DefaultLease, the effector's default.
func WithLease(d time.Duration) Option { return func(s *Source) { s.lease = d } }

// WithBatch sets how many intents one fetch takes at most. ReceiveBatch's
// fetches take no more than its max, so that no intent is fetched only to
// be given back; Receive's take the batch. Default: DefaultBatch.
func WithBatch(n int) Option { return func(s *Source) { s.batch = n } }

// WithFetchWait sets the longest one fetch waits for an intent. Default:
// DefaultFetchWait.
func WithFetchWait(d time.Duration) Option { return func(s *Source) { s.fetchWait = d } }

// WithMaxDeliver sets how many deliveries of an intent the source hands to
// Serve; the next delivery goes to the dead letters. Default:
// DefaultMaxDeliver. Keep it above the effector's WithMaxAttempts, so that
// an intent that keeps failing is given up by the effector with a recorded
// ERROR result; the source's limit catches the rest (an effector whose
// WithMaxAttempts is higher, deliveries never answered for another reason).
func WithMaxDeliver(n int) Option { return func(s *Source) { s.maxDeliver = n } }

// WithLogger sets where the source reports fetches, in-progress signals and
// dead letters that failed. Default: slog.Default().
func WithLogger(l *slog.Logger) Option { return func(s *Source) { s.log = l } }

// Source is an effector.Source and effector.BatchSource fetching intents
// from a queue through a durable pull consumer shared by the effectors.
//
// AckWait and the lease. The server delivers an intent again when
// AckWait passes without an acknowledgement; while Serve holds a delivery
// (from its fetch to its acknowledgement), the source tells the server it is
// in progress every third of AckWait, so a long tool never outlives it. So
// an intent comes back only when its effector died, stalled or lost the
// server for AckWait. The claim lease guards the same intent in the dedup
// store, and the rule is AckWait <= lease: an intent comes back no later
// than its claim can be taken over, and the effector it comes back to waits
// at most lease - AckWait for the claim (or finds the result recorded, if
// the first effector was only stalled and finished meanwhile, which
// answers it without running the tool twice). NewSource refuses an AckWait
// above the lease (WithLease, which must equal the effector's: pass
// e.Lease()) or below MinAckWait.
//
// Receive and ReceiveBatch are not safe for concurrent calls (Serve makes
// one at a time); acknowledgements may come from any goroutine. Close it
// after Serve returns.
type Source struct {
	q          *Queue
	consumer   string
	ackWait    time.Duration
	lease      time.Duration
	batch      int
	fetchWait  time.Duration
	maxDeliver int
	log        *slog.Logger

	cons jetstream.Consumer
	buf  []fetched // fetched, not yet handed out

	mu sync.Mutex
	// held holds the deliveries fetched and not yet acknowledged, by stream
	// sequence: a later delivery of the same intent replaces an earlier
	// one, whose in-progress signals would otherwise keep it from ever
	// being delivered again.
	held map[uint64]jetstream.Msg
	// msgs finds again the message of each intent handed out, for AckBatch,
	// until it is acknowledged.
	msgs handedout.Table[heldMsg]

	// abandoned runs while a fetch a cancelled Receive gave up is still
	// open on the server, giving back what it gets.
	abandoned sync.WaitGroup

	stop chan struct{}
	done chan struct{}
}

// heldMsg is a message handed out, with its stream sequence.
type heldMsg struct {
	m   jetstream.Msg
	seq uint64
}

// fetched is a fetched message with its metadata, read once.
type fetched struct {
	m  jetstream.Msg
	md *jetstream.MsgMetadata
}

var (
	_ effector.Source      = (*Source)(nil)
	_ effector.BatchSource = (*Source)(nil)
	_ effector.BatchAcker  = (*Source)(nil)
)

// NewSource makes the durable consumer of the queue's intents, or takes the
// existing one, and returns a source fetching from it. The consumer
// acknowledges explicitly, waits AckWait, and delivers an intent at most
// WithMaxDeliver + 3 times (the last three for the move to the dead
// letters). It refuses to change an existing consumer: the effectors
// sharing it must agree on WithAckWait and WithMaxDeliver (to change them,
// stop them all and delete the consumer).
func (q *Queue) NewSource(ctx context.Context, opts ...Option) (*Source, error) {
	s := &Source{q: q, consumer: DefaultConsumer, ackWait: DefaultAckWait, lease: DefaultLease,
		batch: DefaultBatch, fetchWait: DefaultFetchWait, maxDeliver: DefaultMaxDeliver, log: slog.Default(),
		held: map[uint64]jetstream.Msg{}, stop: make(chan struct{}), done: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	var ps []string
	if s.consumer == "" || len(s.consumer) > maxName || !plain(s.consumer) {
		ps = append(ps, fmt.Sprintf("WithConsumer(%q): want 1 to %d letters, digits, '-' or '_'", s.consumer, maxName))
	}
	if s.ackWait < MinAckWait {
		ps = append(ps, fmt.Sprintf("WithAckWait(%v): want at least %v (MinAckWait)", s.ackWait, MinAckWait))
	}
	if s.lease <= 0 {
		ps = append(ps, fmt.Sprintf("WithLease(%v): want the effector's lease (WithLease(e.Lease()))", s.lease))
	} else if s.ackWait > s.lease {
		ps = append(ps, fmt.Sprintf("WithAckWait(%v) is longer than the lease (%v): an intent whose effector died would come back only after its claim could have been taken over; want AckWait <= lease (give WithLease the effector's lease, e.Lease())", s.ackWait, s.lease))
	}
	if s.batch < 1 {
		ps = append(ps, fmt.Sprintf("WithBatch(%d): want at least 1", s.batch))
	}
	if s.fetchWait <= 0 {
		ps = append(ps, fmt.Sprintf("WithFetchWait(%v): want a positive duration", s.fetchWait))
	}
	if s.maxDeliver < 1 {
		ps = append(ps, fmt.Sprintf("WithMaxDeliver(%d): want at least 1", s.maxDeliver))
	}
	if s.log == nil {
		ps = append(ps, "WithLogger(nil): pass a logger, or slog.New(slog.DiscardHandler) for none")
	}
	if len(ps) > 0 {
		return nil, fmt.Errorf("natsstream: NewSource: %s", strings.Join(ps, "; "))
	}
	cfg := jetstream.ConsumerConfig{
		Durable: s.consumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: s.ackWait,
		MaxDeliver: s.maxDeliver + deadLetterTries, DeliverPolicy: jetstream.DeliverAllPolicy,
		FilterSubject: q.subject("intents", "*"),
	}
	// Made, or taken as it is: never changed. The server applies the
	// consumer's AckWait to every effector sharing it, while each signals
	// progress every third of its own; one that changed it would have the
	// intents the others hold delivered again while they run.
	err := q.try(ctx, func(ctx context.Context) error {
		var err error
		s.cons, err = q.js.CreateConsumer(ctx, q.intents, cfg)
		return err
	})
	if errors.Is(err, jetstream.ErrConsumerExists) {
		return nil, fmt.Errorf("natsstream: NewSource: consumer %q of %q exists with another configuration (%s): effectors sharing a consumer must agree on it, since the server applies its AckWait to all of them; pass the same WithAckWait and WithMaxDeliver, or stop every effector of the consumer and delete it (nats consumer rm %s %s) to change them",
			s.consumer, q.intents, s.differences(ctx, cfg), q.intents, s.consumer)
	}
	if err != nil {
		return nil, fmt.Errorf("natsstream: NewSource: making consumer %q of %q: %w", s.consumer, q.intents, err)
	}
	go s.signalProgress()
	return s, nil
}

// differences says how the existing consumer's configuration differs from
// cfg, in the options that set it.
func (s *Source) differences(ctx context.Context, cfg jetstream.ConsumerConfig) string {
	var old *jetstream.ConsumerInfo
	err := s.q.try(ctx, func(ctx context.Context) error {
		c, err := s.q.js.Consumer(ctx, s.q.intents, s.consumer)
		if err == nil {
			old = c.CachedInfo()
		}
		return err
	})
	if err != nil {
		return "it could not be read: " + err.Error()
	}
	var ds []string
	if o := old.Config.AckWait; o != cfg.AckWait {
		ds = append(ds, fmt.Sprintf("its AckWait is %v, this source's %v", o, cfg.AckWait))
	}
	if o := old.Config.MaxDeliver; o != cfg.MaxDeliver {
		ds = append(ds, fmt.Sprintf("it delivers at most %d times, this source %d (WithMaxDeliver(%d) + %d)", o, cfg.MaxDeliver, s.maxDeliver, deadLetterTries))
	}
	if o := old.Config.FilterSubject; o != cfg.FilterSubject {
		ds = append(ds, fmt.Sprintf("it takes subject %q, this source %q", o, cfg.FilterSubject))
	}
	if len(ds) == 0 {
		return "in settings NewSource does not make"
	}
	return strings.Join(ds, "; ")
}

// signalProgress tells the server, every third of AckWait, that each held
// delivery is still being worked on, until Close.
func (s *Source) signalProgress() {
	defer close(s.done)
	t := time.NewTicker(s.ackWait / 3)
	defer t.Stop()
	var ms []jetstream.Msg
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		ms = ms[:0]
		for _, m := range s.held {
			ms = append(ms, m)
		}
		s.mu.Unlock()
		for _, m := range ms {
			if err := m.InProgress(); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
				s.log.Debug("natsstream: in-progress signal failed", "stream", s.q.intents, "error", err.Error())
			}
		}
	}
}

// Receive returns the next intent: the next fetched one, fetching a batch
// when none is left. Those of the batch it has not handed out when the
// source stops (Close, or a crash and AckWait) come back counted one
// delivery more, as if an attempt had failed: ReceiveBatch, which fetches no
// more than it is asked for, does not do that. (Fetching one at a time here
// would cost a round trip to the server per intent: Serve ran 3 to 4 times
// slower.) It blocks until there is one or ctx ends; a stream has
// no end, so it never returns io.EOF. Failed fetches (a lost leader, a
// restarting server) are logged and tried again.
func (s *Source) Receive(ctx context.Context) (effector.Delivery, error) {
	if err := s.fill(ctx, s.batch); err != nil {
		return effector.Delivery{}, err
	}
	f := s.buf[0]
	s.buf = s.buf[1:]
	return s.delivery(f), nil
}

// ReceiveBatch appends to buf, at most max, the intents one fetch returned,
// fetching when none is left.
func (s *Source) ReceiveBatch(ctx context.Context, max int, buf []effector.Delivery) ([]effector.Delivery, error) {
	if err := s.fill(ctx, max); err != nil {
		return buf, err
	}
	n := min(max, len(s.buf))
	for _, f := range s.buf[:n] {
		buf = append(buf, s.delivery(f))
	}
	s.buf = s.buf[n:]
	return buf, nil
}

// fill fetches, at most want (and the batch) at a time, until buf holds a
// delivery or ctx ends. It fetches no more than its caller takes: every
// delivery counts toward WithMaxAttempts and WithMaxDeliver, so an intent
// fetched and given back unhanded (at Close, or by AckWait after a crash)
// would come back counted as a failed attempt, and be given up without
// ever having run.
func (s *Source) fill(ctx context.Context, want int) error {
	wait := 50 * time.Millisecond
	for len(s.buf) == 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := s.fetch(ctx, max(1, min(want, s.batch)))
		switch {
		case err == nil:
			wait = 50 * time.Millisecond
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		}
		s.log.WarnContext(ctx, "natsstream: fetching intents failed; trying again", "stream", s.q.intents, "consumer", s.consumer, "error", err.Error())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
	return nil
}

// fetch takes what is ready, up to n, at once; when nothing is, it waits up
// to the fetch wait for one intent.
func (s *Source) fetch(ctx context.Context, n int) error {
	mb, err := s.cons.FetchNoWait(n)
	if err != nil {
		return err
	}
	got := 0
	for m := range mb.Messages() {
		got++
		if err := s.hold(ctx, m); err != nil {
			return err
		}
	}
	if err := mb.Error(); got > 0 || err != nil {
		return err
	}
	// The client waits for the server to end the request (FetchMaxWait),
	// so no intent is sent to a request the client gave up.
	mb, err = s.cons.Fetch(1, jetstream.FetchMaxWait(s.fetchWait))
	if err != nil {
		return err
	}
	select {
	case m, ok := <-mb.Messages():
		if !ok {
			return mb.Error()
		}
		return s.hold(ctx, m)
	case <-ctx.Done():
		// Give back what comes before the request ends.
		s.abandoned.Go(func() {
			for m := range mb.Messages() {
				_ = m.Nak()
			}
		})
		return ctx.Err()
	}
}

// hold keeps a fetched message for handing out, or moves one delivered
// more than WithMaxDeliver times to the dead letters.
func (s *Source) hold(ctx context.Context, m jetstream.Msg) error {
	md, err := m.Metadata()
	if err != nil {
		return fmt.Errorf("natsstream: a fetched message has no metadata: %w", err)
	}
	if int(md.NumDelivered) > s.maxDeliver {
		s.deadLetterMax(ctx, m, md)
		return nil
	}
	s.mu.Lock()
	s.held[md.Sequence.Stream] = m
	s.mu.Unlock()
	s.buf = append(s.buf, fetched{m: m, md: md})
	return nil
}

// deadLetterMax moves an intent delivered past WithMaxDeliver to the dead
// letters, then acknowledges it. If either fails, the server delivers it
// again (up to deadLetterTries times), and the next source tries again.
func (s *Source) deadLetterMax(ctx context.Context, m jetstream.Msg, md *jetstream.MsgMetadata) {
	pos := s.q.intents + "/" + strconv.FormatUint(md.Sequence.Stream, 10)
	dl := DeadLetter{Deliveries: int(md.NumDelivered), Pos: pos, Entry: m.Data(),
		Reason: fmt.Sprintf("natsstream: delivered %d times, more than WithMaxDeliver(%d): every earlier delivery went unanswered (its effector died, stalled past AckWait, or could not record or publish its result); the dedup store knows whether it ran: look up its intent id", md.NumDelivered, s.maxDeliver)}
	in := new(intent.Intent)
	if err := in.UnmarshalJSON(m.Data()); err == nil {
		dl.IntentID = in.ID
	}
	err := s.q.deadLetter(ctx, "delivered-"+pos, dl)
	if err == nil {
		err = s.q.try(ctx, m.DoubleAck)
	}
	if err != nil {
		s.log.ErrorContext(ctx, "natsstream: moving an intent delivered too often to the dead letters failed; it is delivered again", "pos", pos, "error", err.Error())
		return
	}
	s.log.WarnContext(ctx, "natsstream: intent dead-lettered after too many deliveries", "pos", pos, "intent_id", dl.IntentID, "deliveries", dl.Deliveries)
}

func (s *Source) delivery(f fetched) effector.Delivery {
	m, seq := f.m, f.md.Sequence.Stream
	d := effector.Delivery{Offset: -1, Pos: s.q.intents + "/" + strconv.FormatUint(seq, 10), Deliveries: int(f.md.NumDelivered)}
	in := new(intent.Intent)
	if err := in.UnmarshalJSON(m.Data()); err != nil {
		d.Ack = func(ctx context.Context) error { return s.ack(ctx, m, seq, d.Pos) }
		d.Bytes = m.Data()
		d.Err = fmt.Errorf("natsstream: entry %s: %w (publish intents with Queue.Add)", d.Pos, err)
		return d
	}
	d.Ack = func(ctx context.Context) error {
		if err := s.ack(ctx, m, seq, d.Pos); err != nil {
			return err
		}
		s.msgs.Delete(in)
		return nil
	}
	d.Intent, d.Acker = in, s
	s.msgs.Put(in, heldMsg{m, seq})
	return d
}

// AckBatch implements effector.BatchAcker: it double-acks every delivery
// of ds at once, the acknowledgements in flight together on the connection,
// and returns nil once the server has confirmed them all. Each is
// acknowledged as Ack does (retried while the server does not answer, a
// message already acknowledged taken as done), so acknowledging one twice
// is harmless. It refuses a batch holding a delivery this Source did not
// hand out or has acknowledged already, acknowledging none of it (Serve
// then acknowledges each with its Ack).
func (s *Source) AckBatch(ctx context.Context, ds []effector.Delivery) error {
	ms := make([]heldMsg, len(ds))
	for i, d := range ds {
		h, ok := s.msgs.Get(d.Intent)
		if !ok {
			return fmt.Errorf("natsstream: AckBatch was given %s, which this source (consumer %q) did not hand out or has acknowledged already: acknowledge it with its own Ack", d.Pos, s.consumer)
		}
		ms[i] = h
	}
	errs := make([]error, len(ds))
	var wg sync.WaitGroup
	for i, h := range ms {
		wg.Go(func() { errs[i] = s.ack(ctx, h.m, h.seq, ds[i].Pos) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, d := range ds {
		s.msgs.Delete(d.Intent)
	}
	return nil
}

// ack acknowledges m and waits for the server to confirm it (a double
// ack), so Serve counts an intent answered only once the server will not
// deliver it again.
func (s *Source) ack(ctx context.Context, m jetstream.Msg, seq uint64, pos string) error {
	err := s.q.try(ctx, m.DoubleAck)
	if err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
		return fmt.Errorf("natsstream: acknowledging %s: %w", pos, err)
	}
	s.mu.Lock()
	if s.held[seq] == m {
		delete(s.held, seq)
	}
	s.mu.Unlock()
	return nil
}

// Close stops the in-progress signals and gives back, for delivery at
// once, every intent fetched and not acknowledged: those not handed out,
// and those Serve left unanswered. A given-back intent counts one more
// delivery. It first waits, at most the fetch wait, for a fetch that a
// cancelled Receive left open. Call it after Serve returns.
func (s *Source) Close(ctx context.Context) error {
	select {
	case <-s.stop:
		return nil
	default:
	}
	close(s.stop)
	<-s.done
	// An abandoned fetch still open would take what is given back below
	// and give it back again, counting it one more delivery: wait for it
	// to end (within the fetch wait).
	s.abandoned.Wait()
	s.mu.Lock()
	held := make([]jetstream.Msg, 0, len(s.held))
	for _, m := range s.held {
		held = append(held, m)
	}
	clear(s.held)
	s.mu.Unlock()
	s.msgs.Clear()
	s.buf = nil
	var errs []error
	for _, m := range held {
		if err := m.Nak(); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("natsstream: giving back %d of %d intents failed (they come back after AckWait): %w", len(errs), len(held), errors.Join(errs...))
	}
	return nil
}
