package effector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/beam-agents/toolreg/intent"
)

// Delivery is one intent handed out by a Source, with the means to
// acknowledge it.
type Delivery struct {
	// Intent is the decoded intent. It is nil when the source could not decode
	// the entry; Err then says why.
	Intent *intent.Intent
	// Err reports an entry that is no intent (bad JSON, a line too long). No
	// result can answer it, so Serve hands it to the entry dead-letter sink
	// (WithEntryDeadLetter) and acknowledges it once the sink has it.
	Err error
	// Bytes holds, with Err, the entry's bytes as read (a line too long is
	// cut to the source's limit), for the dead-letter sink.
	Bytes []byte
	// Offset is, with Err, where the entry starts in its source, in bytes,
	// or -1 when the source has no offsets.
	Offset int64
	// Pos says where the entry came from, for logs: "intents.jsonl:17", a
	// stream entry id.
	Pos string
	// Deliveries counts the times the source has delivered this entry, this
	// one included, when the source counts them (Redis Streams' delivery
	// count); 0 when it does not. Serve passes it to Process with
	// WithDeliveryCount, for WithMaxAttempts.
	Deliveries int
	// Ack tells the source the entry is answered, so it must not be delivered
	// again. Serve calls it only after the intent's result is published (or
	// the intent was refused and dead-lettered, or the entry is no intent).
	// Nil means the source needs no acknowledgement.
	Ack func(ctx context.Context) error
	// Acker, when set, acknowledges this delivery together with others of
	// its source: Serve acknowledges an intent's delivery with others
	// through Acker.AckBatch in place of Ack (one round trip for many).
	// Ack stays set: it is the fallback when AckBatch fails, and the path of
	// an entry that is no intent (a source that sets no Ack has those
	// acknowledged through AckBatch, one at a time). Nil: Serve calls Ack
	// alone. Serve groups
	// deliveries by Acker with ==, so it must be comparable: a pointer, as
	// the sources' are.
	//
	// A source that hands out another's deliveries and wraps their Ack (to
	// count, log, or fail acknowledgements) must wrap Acker too, with a
	// BatchAcker that does the same for a batch and passes the deliveries on
	// with the inner Acker, or set it to nil; otherwise Serve acknowledges
	// through the inner Acker and its wrapped Ack is never called.
	Acker BatchAcker
}

// BatchAcker acknowledges many deliveries of one source in one call (one
// XACK with many ids, one DELETE ... WHERE id = ANY, one checkpoint save).
type BatchAcker interface {
	// AckBatch acknowledges ds, deliveries handed out with this BatchAcker
	// as their Acker, whose results are durable. It returns nil only once
	// every one is acknowledged. On an error Serve acknowledges each of
	// them again through its own Ack (with backoff), so acknowledging a
	// delivery twice must be harmless.
	AckBatch(ctx context.Context, ds []Delivery) error
}

// Source hands out intents to execute.
type Source interface {
	// Receive blocks until the next delivery. It returns io.EOF when there
	// are no more and never will be (the end of a file), or ctx's error. Any
	// other error stops Serve.
	Receive(ctx context.Context) (Delivery, error)
}

// BatchSource is a Source that can hand over, in one call, the deliveries
// it has ready (lines already read, a stream read's COUNT, a queue's
// LIMIT), so that Serve verifies and claims them as one batch. A Source that
// is not a BatchSource is served in batches of one.
type BatchSource interface {
	Source
	// ReceiveBatch blocks until at least one delivery is ready, then
	// appends to buf those ready without waiting more, at most max, and
	// returns buf. Its errors mean what Receive's mean; deliveries it
	// returns with an error are still served.
	ReceiveBatch(ctx context.Context, max int, buf []Delivery) ([]Delivery, error)
}

// Sink publishes results where their consumers read them.
type Sink interface {
	// Publish returns nil only once res is published: written where its
	// consumers will read it, as durably as the sink can make it.
	Publish(ctx context.Context, res intent.Result) error
}

// Processor executes an intent and returns its terminal result.
// *Effector is the Processor; see Effector.Process for what its errors mean.
type Processor interface {
	Process(ctx context.Context, in *intent.Intent) (intent.Result, error)
}

var _ Processor = (*Effector)(nil)

// ServeOption configures Serve.
type ServeOption func(*serveConfig)

type serveConfig struct {
	deadEntry   EntryDeadLetterFunc
	workers     int
	drain       time.Duration
	minBackoff  time.Duration
	maxBackoff  time.Duration
	logger      *slog.Logger
	decisions   time.Duration // WithDecisions
	batch       int           // WithBatchSize
	entityOrder bool          // WithEntityOrder
}

// WithBatchSize sets how many deliveries Serve takes at once from a
// BatchSource, verifies, and claims in one store call (DedupStore.ClaimBatch),
// and so how many claimed intents may wait for a worker besides those the
// workers run: two batches' worth, as Serve claims the next batch while the
// last is being claimed. A claim's lease is counted from before its batch's store call;
// while its intent waits for a worker, Serve renews the lease (it releases the
// claim and claims it again) before less is left than the tool may take
// (its timeout, the store timeout and LeaseMargin), so an intent queued
// behind slow tools is never run on a lapsed claim. A crash leaves every
// intent its batches held claimed to lapse, each counting an attempt
// (WithMaxAttempts): a poison intent that crashes the process again and again
// also counts attempts against the intents claimed beside it, which may
// then be given up unrun. WithBatchSize(1) claims one intent when a worker
// is free, and nothing ahead. A reclaimed claim (an
// earlier owner may have run the intent) is never released to be renewed,
// which would erase that: if its lease runs low first, it waits for the
// lease to lapse and is claimed again as reclaimed. A Source that is no
// BatchSource is served in batches of one, claimed by the worker that runs
// it. Default: DefaultBatchSize.
func WithBatchSize(n int) ServeOption {
	return func(c *serveConfig) { c.batch = n }
}

// WithWorkers sets how many intents Serve processes at once: how many tools
// run at once. With one, the default, results are published in the order
// intents arrive, but for an intent another owner holds (another Serve on
// the store, a redelivered copy still running): it waits for that claim
// aside, and its result comes when it is answered. WithEntityOrder keeps an
// entity's intents in order whatever holds them.
func WithWorkers(n int) ServeOption {
	return func(c *serveConfig) { c.workers = n }
}

// WithDrainTimeout sets how long, once ctx ends, Serve lets the intents in
// flight finish (run, record, publish, acknowledge) before it stops waiting
// for them. An intent whose tool has not started by then is released; one
// whose tool still runs is left to it (see DetachedError): its result is
// recorded if it returns before the process exits, and otherwise its claim
// lapses and the next owner runs it as reclaimed. Either way it is left
// unacknowledged, for redelivery. Keep it above the tools' timeouts.
// Default: 30s.
func WithDrainTimeout(d time.Duration) ServeOption {
	return func(c *serveConfig) { c.drain = d }
}

// WithRetryBackoff sets the wait between attempts when processing (the
// store), publishing or acknowledging fails: from min, doubling up to max.
// Serve retries until it succeeds or shutdown; it never skips an intent.
// Default: 50ms to 5s.
func WithRetryBackoff(min, max time.Duration) ServeOption {
	return func(c *serveConfig) { c.minBackoff, c.maxBackoff = min, max }
}

// EntryDeadLetterFunc receives an entry a source could not decode into an
// intent (Delivery.Err is set), with its bytes and offset. An error makes
// Serve retry it, and leaves the entry unacknowledged until it succeeds.
type EntryDeadLetterFunc func(ctx context.Context, d Delivery) error

// WithEntryDeadLetter sets where entries that are no intent go. The default
// logs each at level Error, with its position, offset, length and error
// (never its bytes, which may hold personal data), and drops it: pass a sink
// that keeps the bytes where they must not be lost.
func WithEntryDeadLetter(f EntryDeadLetterFunc) ServeOption {
	return func(c *serveConfig) { c.deadEntry = f }
}

// WithDecisions makes Serve carry out the approval decisions recorded in
// the effector's store (Effector.ResumeDecided) when it starts and then
// every interval, such as those `toolreg approvals approve|deny` records
// from another process, and publish each outcome to the sink like any
// result: the approved call's, or the REJECTED or EXPIRED of a denied or
// overdue one. A publish that fails is retried at the next pass, or, if
// Serve stops first, by the next effector's pass once the publication's
// lease has run out (Effector.ResumeDecided records each publication in the
// store).
// The processor must be an *Effector. Default: off.
func WithDecisions(interval time.Duration) ServeOption {
	return func(c *serveConfig) { c.decisions = interval }
}

// decisionResumer is what WithDecisions needs of the processor.
type decisionResumer interface {
	ResumeDecided(ctx context.Context, publish func(context.Context, intent.Result) error) (int, error)
}

// resumeDecisions is WithDecisions' loop, until ctx ends. An outcome
// whose publish failed is published at a later pass (ResumeDecided keeps
// its publication in the store).
func (s *server) resumeDecisions(ctx context.Context, r decisionResumer, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := r.ResumeDecided(ctx, s.sink.Publish); err != nil && ctx.Err() == nil {
			s.log.ErrorContext(ctx, "effector: carrying out approval decisions; retrying at the next pass", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// WithServeLogger sets Serve's logger. Default: slog.Default(). Serve logs
// intent ids, positions, statuses and errors; never arguments or payloads.
func WithServeLogger(l *slog.Logger) ServeOption {
	return func(c *serveConfig) { c.logger = l }
}

// UnansweredError is what Serve returns when it stopped with deliveries it
// received but could not answer (their result was not published, or not
// acknowledged) before the drain timeout. Their sources deliver them again
// (a jsonl.Source once it is opened again: the one Serve used does not go
// back over lines it handed out); the store answers any that ran with their
// recorded result.
type UnansweredError struct {
	Unanswered int
	Cause      error // why Serve stopped: ctx's cause, or the source's error
}

func (e *UnansweredError) Error() string {
	return fmt.Sprintf("effector: serve stopped (%v) with %d deliveries unanswered; they stay unacknowledged for redelivery", e.Cause, e.Unanswered)
}

func (e *UnansweredError) Unwrap() error { return e.Cause }

// Serve pulls intents from source, processes each with p (an *Effector),
// publishes each result to sink, and only then acknowledges the delivery: an
// intent is never acknowledged without a published result, and a delivery
// whose processing or publishing fails is retried, never dropped.
//
// With an *Effector, Serve works in batches (pipeline.go): it claims what a
// BatchSource has ready in one store call (WithBatchSize), runs the claimed
// intents on WithWorkers workers, writes the results waiting in one store
// call, and publishes each result only once it is durable. A worker starts
// the next tool before the last result is written, so a crash can leave
// several intents run and unrecorded: each runs again as reclaimed, its
// result saying "effect unknown". With one worker, results are published in
// the order intents arrive, but for one another owner holds (WithWorkers).
//
// It returns nil when source reports io.EOF and every delivery is answered,
// or when ctx ends and every delivery in flight is answered within the drain
// timeout (WithDrainTimeout); it receives nothing after ctx ends. It returns
// the source's error if Receive fails, and an *UnansweredError if deliveries
// were left unanswered. Run it under signal.NotifyContext(ctx, syscall.SIGTERM)
// for graceful shutdown.
func Serve(ctx context.Context, source Source, sink Sink, p Processor, opts ...ServeOption) error {
	cfg := serveConfig{workers: 1, batch: DefaultBatchSize, drain: 30 * time.Second, minBackoff: 50 * time.Millisecond, maxBackoff: 5 * time.Second, logger: slog.Default()}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case source == nil:
		return errors.New("effector: Serve was given a nil source: pass where intents come from, such as jsonl.OpenFile's or redisstream.NewSource's")
	case sink == nil:
		return errors.New("effector: Serve was given a nil sink: pass where results go, such as jsonl.NewSink's or redisstream.NewSink's")
	case p == nil:
		return errors.New("effector: Serve was given a nil processor: pass the *Effector that New returns")
	case cfg.workers < 1:
		return fmt.Errorf("effector: WithWorkers(%d): want at least 1", cfg.workers)
	case cfg.batch < 1:
		return fmt.Errorf("effector: WithBatchSize(%d): want at least 1, such as %d", cfg.batch, DefaultBatchSize)
	case cfg.drain < 0:
		return fmt.Errorf("effector: WithDrainTimeout(%v): want zero or more", cfg.drain)
	case cfg.minBackoff <= 0 || cfg.maxBackoff < cfg.minBackoff:
		return fmt.Errorf("effector: WithRetryBackoff(%v, %v): want 0 < min <= max", cfg.minBackoff, cfg.maxBackoff)
	case cfg.logger == nil:
		return errors.New("effector: WithServeLogger(nil): pass a logger, or slog.New(slog.DiscardHandler) for none")
	case cfg.decisions < 0:
		return fmt.Errorf("effector: WithDecisions(%v): want a positive interval, such as a minute", cfg.decisions)
	}
	resumer, ok := p.(decisionResumer)
	if cfg.decisions > 0 && !ok {
		return fmt.Errorf("effector: WithDecisions needs the *Effector as the processor, not a %T", p)
	}
	if cfg.deadEntry == nil {
		cfg.deadEntry = func(ctx context.Context, d Delivery) error {
			cfg.logger.ErrorContext(ctx, "effector: entry is no intent; dropping it", "pos", d.Pos, "offset", d.Offset, "bytes", len(d.Bytes), "error", d.Err.Error())
			return nil
		}
	}
	s := &server{cfg: cfg, sink: sink, p: p, log: cfg.logger}
	if cfg.decisions > 0 {
		dctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.resumeDecisions(dctx, resumer, cfg.decisions)
		}()
		defer func() { stop(); <-done }()
	}

	// Work runs on a context that outlives ctx by the drain timeout, so an
	// intent in flight at shutdown can finish and be answered.
	work, cancelWork := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelWork(nil)
	stopDrain := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(cfg.drain, func() {
			cancelWork(fmt.Errorf("effector: drain timeout %v passed after shutdown", cfg.drain))
		})
		context.AfterFunc(work, func() { t.Stop() })
	})
	defer stopDrain()

	// A delivery is received only when a worker is free to take it, or,
	// from a BatchSource, when there is room for a batch that waits for
	// workers (its claims' leases kept by keepLeases), so that shutdown
	// leaves little received and waiting. The workers live as long as Serve:
	// a goroutine per intent would grow a fresh stack for each.
	bs, batched := source.(BatchSource)
	prefetch := 0
	if batched && cfg.batch > 1 {
		// WithBatchSize(1) claims nothing ahead of the workers: a crash
		// then leaves only the intents that run claimed.
		prefetch = cfg.batch
	}
	slots := make(chan struct{}, cfg.workers+2*prefetch) // two batches being claimed
	jobs := make(chan *item, cfg.workers+2*prefetch)
	// The completer hands each intent whose result is durable to the
	// sink, and then to finish: wait for a staged result (jsonl's Sink) to be
	// durable, then acknowledge it. Up to maxFinishing of those wait at
	// once, so their fsyncs and checkpoint saves are shared.
	finishing := make(chan struct{}, max(cfg.workers, maxFinishing))
	fin := newFinisher(s, work, ctx, func() { <-finishing })
	e, _ := p.(*Effector)
	pl := newPipeline(s, e, work, ctx, fin, finishing, slots, jobs)
	keeperDone := make(chan struct{})
	var keeper sync.WaitGroup
	if e != nil && batched {
		keeper.Go(func() { pl.keepLeases(keeperDone) })
	}
	var wg sync.WaitGroup
	for range cfg.workers {
		wg.Go(func() {
			var one [1]*item
			var b claimBufs
			for it := range jobs {
				if !batched {
					one[0] = it
					pl.claimStage(one[:], &b) // a batch of one, claimed by its worker
				}
				if pl.run(it) {
					<-slots
				}
			}
		})
	}
	var stopErr error
	var buf []Delivery
	var claimers sync.WaitGroup
	claimBufsFree := make(chan *claimBufs, 2) // at most two batches being claimed
	claimBufsFree <- new(claimBufs)
	claimBufsFree <- new(claimBufs)
	dispatched := make(chan struct{})
	close(dispatched)
	var last lastBatch
receive:
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			stopErr = context.Cause(ctx)
			break receive
		}
		n := 1
	more:
		for n < max(prefetch, 1) {
			select {
			case slots <- struct{}{}:
				n++
			default:
				break more
			}
		}
		var err error
		if batched {
			buf, err = bs.ReceiveBatch(ctx, n, buf[:0])
		} else {
			var d Delivery
			if d, err = source.Receive(ctx); err == nil {
				buf = append(buf[:0], d)
			} else {
				buf = buf[:0]
			}
		}
		for range n - len(buf) {
			<-slots
		}
		if len(buf) > 0 {
			s.received.Add(int64(len(buf)))
			s.processing.Add(int64(len(buf)))
			items := make([]*item, 0, len(buf))
			for _, d := range buf {
				items = append(items, pl.newItem(d))
			}
			clear(buf)
			if cfg.entityOrder {
				orderBatch(items)
			}
			if !batched {
				for _, it := range items {
					pl.dispatch(it) // its worker claims it
				}
				continue
			}
			// The batch is claimed while the next is received and claimed:
			// two claims in flight share the store's commits. Batches reach
			// the workers in the order they came. So an intent delivered
			// again in the next batch (a redelivery, a duplicate line) is
			// not claimed with it: its claim could land before the earlier
			// batch's, and the earlier copy, found in flight and handed to
			// a worker first, would wait for the later copy, which waits for
			// a worker behind it. Its worker claims it alone, after the
			// earlier copy, and finds it in flight (then it waits aside,
			// awaitClaim) or done
			// (TestServeTwoCopiesClaimedInBatchesAtOnceDoNotWaitOnEachOther).
			last.markRedelivered(items)
			cb := <-claimBufsFree
			prev, done := dispatched, make(chan struct{})
			dispatched = done
			claimers.Go(func() {
				defer close(done)
				pl.claimStage(items, cb)
				<-prev
				pl.handOut(items)
				for _, it := range items {
					pl.dispatch(it)
				}
				claimBufsFree <- cb
			})
		}
		if err != nil {
			switch {
			case errors.Is(err, io.EOF):
			case ctx.Err() != nil:
				stopErr = context.Cause(ctx)
			default:
				stopErr = fmt.Errorf("effector: receiving intents: %w", err)
			}
			break receive
		}
	}
	claimers.Wait()
	pl.ents.waitIdle() // every intent received is with the workers
	for range cap(slots) {
		slots <- struct{}{} // every item has left the workers (and awaitClaim)
	}
	close(jobs)
	wg.Wait()
	close(keeperDone)
	keeper.Wait()
	pl.comp.close()
	fin.close()
	cancelWork(nil)

	unanswered := int(s.received.Load() - s.answered.Load())
	s.log.Info("effector: serve stopped", "received", s.received.Load(), "answered", s.answered.Load(), "unanswered", unanswered)
	switch {
	case unanswered > 0:
		if stopErr == nil {
			stopErr = context.Cause(work)
		}
		return &UnansweredError{Unanswered: unanswered, Cause: stopErr}
	case stopErr != nil && ctx.Err() == nil:
		return stopErr // the source failed
	}
	return nil
}

type server struct {
	cfg  serveConfig
	sink Sink
	p    Processor
	log  *slog.Logger

	received, answered atomic.Int64
	processing         atomic.Int64 // received and not yet answered or handed off
}

// maxFinishing is how many processed intents may wait at once for their
// results to be durable and their acknowledgement (at least the workers):
// enough that the workers go on while a batch's fsync and checkpoint save
// take a few milliseconds, and a bound on the results held meanwhile.
const maxFinishing = 1024

// StagedSink is a Sink that publishes in two steps, so that Serve can send
// many results before waiting for any: Stage starts publishing res (writes
// it, buffers it, or sends it without waiting for the answer), and the wait
// it returns returns nil once res is published as Publish would have it
// (written where its consumers read it, durable). Serve stages results in
// the order their completions became durable, in one goroutine, so Stage
// should not block for long; it waits afterwards, beside the waits of other
// results, and acknowledges an intent only once its wait returned nil. When
// a wait fails, Serve publishes that result again with Publish (retrying
// with backoff), so a sink whose results carry an identity (a message id, a
// line a consumer may read twice) needs nothing more. An error from Stage
// itself is retried, with backoff, by Stage again.
//
// The Sinks of jsonl, natsstream, redisstream and pgqueue are StagedSinks.
// A wrapper of a sink (one counting, one logging) hides Stage unless it
// implements it too, which makes Serve publish through Publish, one result
// at a time.
type StagedSink interface {
	Sink
	Stage(ctx context.Context, res intent.Result) (wait func() error, err error)
}

// finishItem is a delivery processed, its result staged or published, that
// waits for its result to be durable and its acknowledgement.
type finishItem struct {
	d       Delivery
	res     intent.Result
	wait    func() error // the staged result's fsync; nil when published
	publish bool         // wait is the result's whole Publish
	refused bool
}

// answer dead-letters and acknowledges an entry that is no intent,
// retrying each step until it succeeds or work ends, and counts it answered.
// Giving up leaves it unacknowledged. stop is the serve context: once it
// ends, failed steps are not retried.
func (s *server) answer(work, stop context.Context, d Delivery) {
	if s.retry(work, stop, d, "dead-lettering the undecodable entry of", func() error { return s.cfg.deadEntry(work, d) }) &&
		s.retry(work, stop, d, "acknowledging", func() error { return ack(work, d) }) {
		s.answered.Add(1)
	}
}

// finish waits for its result to be durable (publishing it again if its
// fsync failed: the retry's own fsync covers it, and a duplicate result line
// is harmless to consumers) unless waited is set, acknowledges it, and
// counts it answered. It is the finisher's path for one delivery at a time.
func (s *server) finish(work, stop context.Context, it *finishItem, waitErr error, waited bool) {
	d := it.d
	if !waited && it.wait != nil {
		waitErr = it.wait()
	}
	if waitErr != nil && !s.retry(work, stop, d, "publishing the result of", func() error { return s.sink.Publish(work, it.res) }) {
		return
	}
	if !s.retry(work, stop, d, "acknowledging", func() error { return ack(work, d) }) {
		return
	}
	s.answeredOne(work, it)
}

func (s *server) answeredOne(ctx context.Context, it *finishItem) {
	s.answered.Add(1)
	if s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.DebugContext(ctx, "effector: intent answered", "intent_id", it.d.Intent.ID, "pos", it.d.Pos, "status", it.res.Status.String(), "refused", it.refused)
	}
}

// ack acknowledges d alone: through its Ack, or, from a source that set
// only an Acker, through a batch of one.
func ack(ctx context.Context, d Delivery) error {
	switch {
	case d.Ack != nil:
		return d.Ack(ctx)
	case d.Acker != nil:
		return d.Acker.AckBatch(ctx, []Delivery{d})
	}
	return nil
}

// retry runs step until it returns nil (true) or it fails after work or stop
// has ended (false), waiting with backoff between attempts.
func (s *server) retry(work, stop context.Context, d Delivery, what string, step func() error) bool {
	backoff := s.cfg.minBackoff
	for {
		err := step()
		if err == nil {
			return true
		}
		id := ""
		if d.Intent != nil {
			id = d.Intent.ID
		}
		if work.Err() != nil || stop.Err() != nil {
			s.log.WarnContext(work, "effector: "+what+" intent failed at shutdown; leaving it for redelivery", "intent_id", id, "pos", d.Pos, "error", err.Error())
			return false
		}
		s.log.WarnContext(work, "effector: "+what+" intent failed; retrying", "intent_id", id, "pos", d.Pos, "error", err.Error(), "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-work.Done():
			t.Stop()
		case <-stop.Done():
			t.Stop()
		}
		backoff = min(2*backoff, s.cfg.maxBackoff)
	}
}

// lastBatch holds the intent ids of the batch Serve received last, to find
// an intent delivered again in the next one.
type lastBatch struct{ prev, cur map[string]struct{} }

// markRedelivered sets claimAlone on each item whose intent the batch before
// holds, and keeps items' ids for the next batch.
func (l *lastBatch) markRedelivered(items []*item) {
	if l.cur == nil {
		l.prev, l.cur = map[string]struct{}{}, map[string]struct{}{}
	}
	clear(l.cur)
	for _, it := range items {
		if it.d.Intent == nil {
			continue
		}
		id := it.d.Intent.ID
		if _, ok := l.prev[id]; ok {
			it.claimAlone = true
		}
		l.cur[id] = struct{}{}
	}
	l.prev, l.cur = l.cur, l.prev
}
