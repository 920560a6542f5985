package effector

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/beam-agents/toolreg/intent"
)

// Serve's pipeline. Every intent walks the same named stages, whether it
// comes alone to Process or in a batch to Serve:
//
//	verify     the signature and the intent id (Effector.verify)
//	gate       an approval's request or execution (approval.go, in outcome)
//	authority  scopes and budgets (budget.go, in outcome)
//	claim      the intent id in the store
//	run        the tool, under its timeout (Effector.execute)
//	complete   the terminal result, in the store (Effector.record)
//	publish    the result to the sink, then the acknowledgement (finisher)
//
// Process walks them for one intent, with one store call per claim and per
// completion. Serve walks them for batches: its receiver takes what the
// source has ready (BatchSource), verifies it and claims every intent it can
// in one ClaimBatch (claimStage); its workers, WithWorkers of them, run the
// claimed intents; its completer writes the results waiting in one
// CompleteBatch, and its publisher publishes each only once it is durable.
// An intent the batch cannot take (a budgeted tool, whose claim counts it
// through ClaimAdmit; an approval, its execution, or a tool that requires
// one; an intent that fails verification or has expired) goes the whole of
// Process's way in a worker, alone: only its publication joins the
// others'. One another owner holds, or whose claim failed, waits for its
// claim off the workers (awaitClaim) and then goes on as claimed.

// DefaultBatchSize is how many deliveries Serve takes from a BatchSource,
// and claims, in one batch by default (WithBatchSize).
const DefaultBatchSize = 100

// maxCompleteBatch is the most completions the completer writes in one
// store call, and maxBacklog the most intents it holds (waiting to be
// written, retried, or published): a worker handing it more waits, so a
// store or sink that falls behind holds the workers back.
const (
	maxCompleteBatch = 256
	maxBacklog       = 1024
)

// itemKind says which way an item goes through the pipeline.
type itemKind uint8

const (
	kindProcess  itemKind = iota // the whole of Process, alone, in a worker
	kindEntry                    // an entry that is no intent: dead-lettered
	kindClaimed                  // claimed by claimStage: a worker runs it
	kindAnswered                 // answered by claimStage (done, mismatch)
)

// The owner of an item's publication once its tool has run: the worker,
// until it hands the result to the completer; the completer; or nobody, when
// the worker gave the delivery up while its tool runs on, detached (its
// result is still completed, for the redelivery to find).
const (
	ownerWorker int32 = iota
	ownerCompleter
	ownerAbandoned
)

// The state of an item's publication in the completer's order.
const (
	pubPending uint8 = iota // its completion is not durable yet
	pubReady                // durable: publish it
	pubDropped              // nothing to publish here (left for redelivery, or handed on)
)

// item is one delivery in Serve's pipeline.
type item struct {
	pl   *pipeline
	d    Delivery
	kind itemKind

	// Set by claimStage for kindClaimed, and by renew.
	cl   claim
	call Call
	// renewFailed: a renewal of the claim's lease failed; the item waits
	// for its claim aside (awaitClaim).
	renewFailed bool
	// claimAlone: the batch before this one holds its intent's id, so its
	// batch does not claim it (Serve's receive loop says why); its worker
	// claims it alone.
	claimAlone bool
	// inFlight: its claim found another owner holding it; claimErr: its
	// claim failed. Either way it waits for its claim off the workers
	// (awaitClaim).
	inFlight bool
	claimErr error
	// processWay: it takes Process's way, whatever claimStage would make
	// of it: a claim answered with a result that cannot be read, an intent
	// given up past WithMaxAttempts.
	processWay bool

	res     intent.Result
	refused bool // dead-lettered: no result, only the acknowledgement
	owner   atomic.Int32

	// The completion, set by completer.add.
	wire    []byte
	ttl     time.Duration
	tries   int
	backoff time.Duration
	nextTry int64
	publish bool  // the completer publishes it once durable
	pub     uint8 // its publication's state; under the completer's lock
}

// pipeline is one Serve's stages after receiving.
type pipeline struct {
	s          *server
	e          *Effector // nil: the processor is no *Effector, and every delivery takes Process's way
	work, stop context.Context
	comp       *completer
	fin        *finisher
	finishing  chan struct{} // a slot per intent handed to the finisher
	jobs       chan *item    // the workers'
	slots      chan struct{} // a slot per item between receiving and leaving a worker (Serve's)
	ents       *entities     // WithEntityOrder's; nil without it

	// waiting holds the claimed items no worker has started, whose leases
	// keepLeases renews.
	wmu     sync.Mutex
	waiting map[*item]struct{}
}

// claimBufs are claimStage's buffers: the receiver's, or a worker's.
type claimBufs struct {
	reqs []ClaimRequest
	outs []ClaimOutcome
	idx  []int
}

func newPipeline(s *server, e *Effector, work, stop context.Context, fin *finisher, finishing, slots chan struct{}, jobs chan *item) *pipeline {
	pl := &pipeline{s: s, e: e, work: work, stop: stop, fin: fin, finishing: finishing, slots: slots, jobs: jobs, waiting: map[*item]struct{}{}}
	if s.cfg.entityOrder {
		pl.ents = newEntities()
	}
	pl.comp = newCompleter(pl)
	return pl
}

// newItem makes d an item of the pipeline.
func (pl *pipeline) newItem(d Delivery) *item {
	it := &item{pl: pl, d: d}
	if d.Err != nil {
		it.kind = kindEntry
	}
	return it
}

// claimStage verifies items and claims, in one ClaimBatch, those that the
// batch can take; it sets each item's kind. The lease of a claim is counted
// from before the call (DedupStore.ClaimBatch), so that the time the call
// takes and the time the item then waits for a worker are taken from it.
func (pl *pipeline) claimStage(items []*item, b *claimBufs) {
	e := pl.e
	if e == nil {
		return // every delivery takes Process's way
	}
	reqs, idx := b.reqs[:0], b.idx[:0]
	now := e.cfg.now()
	for i, it := range items {
		if it.kind != kindProcess || it.claimAlone || it.processWay || !e.batchable(it.d.Intent, now) {
			continue
		}
		it.call = CallOf(it.d.Intent)
		reqs = append(reqs, ClaimRequest{IntentID: it.d.Intent.ID, Call: it.call, Lease: e.cfg.lease})
		idx = append(idx, i)
	}
	b.reqs, b.idx = reqs, idx
	if len(reqs) == 0 {
		return
	}
	outs := b.outs[:0]
	for range reqs {
		outs = append(outs, ClaimOutcome{})
	}
	b.outs = outs
	leaseEnd := monoNow() + int64(e.cfg.lease) // read before the store starts the leases
	sctx, cancel := e.storeContext(pl.work)
	e.store.ClaimBatch(sctx, reqs, outs)
	cancel()
	for k, o := range outs {
		pl.settleClaim(items[idx[k]], o, leaseEnd)
	}
	clear(outs)
	clear(reqs)
}

// settleClaim sets it's kind from the outcome of its claim, whose lease
// ends at leaseEnd (monotonic ns).
func (pl *pipeline) settleClaim(it *item, o ClaimOutcome, leaseEnd int64) {
	e, in := pl.e, it.d.Intent
	it.inFlight, it.claimErr = false, o.Err
	if o.Err != nil {
		return // awaitClaim claims it again
	}
	e.countClaim(pl.work, in, o.Claim) // telemetry.go
	switch o.Claim.State {
	case Claimed:
		it.kind = kindClaimed
		it.cl = claim{token: o.Claim.Token, leaseEnd: leaseEnd, reclaimed: o.Claim.Reclaimed, attempts: o.Claim.Attempts}
	case InFlight:
		it.inFlight = true // awaitClaim waits for the owner
	case Done:
		res, err := storedResult(in, o.Claim.Result)
		if err != nil {
			it.processWay = true // which reports the store's result it cannot read
			return
		}
		it.kind, it.res = kindAnswered, res
		e.answered(pl.work, in, res, nil)
	case Mismatch:
		var err error
		it.kind = kindAnswered
		it.res, err = e.mismatch(pl.work, in, it.call, o.Claim.Recorded) // REJECTED: publish it
		e.answered(pl.work, in, it.res, err)
	default:
		it.processWay = true // which reports the state it does not know
	}
}

// claimOne claims it alone (DedupStore.Claim) and settles the outcome.
func (pl *pipeline) claimOne(it *item) {
	e := pl.e
	leaseEnd := monoNow() + int64(e.cfg.lease) // read before the store starts the lease
	sctx, cancel := e.storeContext(pl.work)
	c, err := e.store.Claim(sctx, it.d.Intent.ID, it.call, e.cfg.lease)
	cancel()
	pl.settleClaim(it, ClaimOutcome{Claim: c, Err: err}, leaseEnd)
}

// answered gives an intent that claimStage answers (done, or a replay that
// asks for another call) the span and the counts Process would give it.
func (e *Effector) answered(ctx context.Context, in *intent.Intent, res intent.Result, err error) {
	ctx, span := e.tel.start(ctx, in)
	e.tel.end(ctx, span, in, res, err)
}

// batchable reports whether in can be claimed in a batch: it passes
// verification, has not expired, and is a call of a side-effecting tool
// with a function, no budget (its claim counts it, through ClaimAdmit, one
// at a time) and no approval. It verifies last: an intent of a tool the
// batch cannot take goes Process's way, which verifies it anyway.
func (e *Effector) batchable(in *intent.Intent, now time.Time) bool {
	return in != nil && !expired(in, now) && e.claimable(in)
}

// claimable is batchable but for expiry: an intent whose claim alone may
// answer it (with another owner's result) before its run checks expiry.
func (e *Effector) claimable(in *intent.Intent) bool {
	if in == nil || in.Kind != intent.KindTool && in.Kind != intent.KindUnspecified {
		return false
	}
	t, err := e.table.Get(in.ToolName)
	if err != nil || !t.SideEffect() || !t.Bound() {
		return false
	}
	if spec := t.Spec(); spec.Approval != nil || spec.Budgets != nil {
		return false
	}
	execution, err := e.verify(in)
	return err == nil && !execution
}

// leaseNeed is the lease a claim of tool's intent must have left when its
// tool starts: what New demands of the whole lease.
func (e *Effector) leaseNeed(tool string) time.Duration {
	return e.timeout(tool) + max(e.cfg.storeTimeout, 0) + LeaseMargin
}

// handOut registers the claimed items of a batch as waiting for a worker,
// for keepLeases.
func (pl *pipeline) handOut(items []*item) {
	pl.wmu.Lock()
	for _, it := range items {
		if it.kind == kindClaimed {
			pl.waiting[it] = struct{}{}
		}
	}
	pl.wmu.Unlock()
}

// run takes it through the stages after the claim, in a worker. It
// reports whether it is done with the worker's slot: an item that waits for
// its claim keeps it (awaitClaim).
func (pl *pipeline) run(it *item) bool {
	if it.kind == kindProcess && it.claimAlone {
		// Its batch left it to be claimed after the copy before it.
		it.claimAlone = false
		// Not checked for expiry: the copy before it may have finished
		// it, and its result is the answer; else its run records EXPIRED.
		if pl.e != nil && pl.e.claimable(it.d.Intent) {
			it.call = CallOf(it.d.Intent)
			pl.claimOne(it)
		} else {
			it.processWay = true
		}
	}
	switch it.kind {
	case kindEntry:
		pl.s.answer(pl.work, pl.stop, it.d)
		pl.left(it) // answer counted it if it was
	case kindAnswered:
		pl.comp.addDone(it)
	case kindClaimed:
		return pl.runClaimed(it)
	default:
		if !it.processWay && (it.inFlight || it.claimErr != nil) {
			go pl.awaitClaim(it)
			return false
		}
		pl.process(it)
	}
	return true
}

// awaitClaim claims again, alone, with backoff, an item whose claim found
// it in another owner's hands or failed, until the claim is the item's or
// answers it, and then hands it back to the workers. It waits off the
// workers: a worker waiting for an intent another Serve holds would hold
// back the claims queued behind it, and that Serve may be waiting, in its
// own worker, for one of them (two Serves given the same intents in crossed
// order waited for each other for ever, their leases renewed); a copy of
// the intent behind the worker would wait for it too. The item keeps its
// slot, so it has room in jobs. It is not checked for expiry here: once
// claimed, its run records EXPIRED under the claim; if the other owner
// finished it, its result is the one. A claim that keeps failing past
// WithMaxAttempts deliveries takes Process's way, which gives it up.
func (pl *pipeline) awaitClaim(it *item) {
	e, in := pl.e, it.d.Intent
	backoff := e.cfg.minBackoff
	for tries := 1; ; tries++ {
		if it.claimErr != nil {
			if it.d.Deliveries > e.cfg.maxAttempts {
				it.processWay = true
				break
			}
			e.storeRetry(pl.work, nil, "claim", in.ID, tries, it.claimErr, backoff) // telemetry.go: logged and counted
		}
		// Waiting for another owner goes on through the drain, as a worker
		// in Process's way would; retrying a failing claim stops when Serve
		// does, as Process's way's retries do.
		until := pl.work
		if it.claimErr != nil {
			until = pl.stop
		}
		e.pause(until, in.ID, backoff, it.inFlight)
		if until.Err() != nil || pl.work.Err() != nil {
			pl.left(it) // unanswered: it stays unacknowledged, for redelivery
			<-pl.slots
			return
		}
		backoff = min(2*backoff, e.cfg.maxBackoff)
		pl.claimOne(it)
		if it.kind != kindProcess || it.processWay || !it.inFlight && it.claimErr == nil {
			break
		}
	}
	pl.handOut([]*item{it})
	pl.jobs <- it
}

// runClaimed runs a claimed item's tool and hands its result to the
// completer. While the store fails to complete, it waits before starting
// the tool; a claim whose lease has less left than the tool may take is
// renewed first. It reports whether it is done with the worker's slot, as
// run does.
func (pl *pipeline) runClaimed(it *item) bool {
	e := pl.e
	pl.wmu.Lock()
	delete(pl.waiting, it)
	pl.wmu.Unlock()
	pl.comp.waitHealthy(pl.work)
	in := it.d.Intent
	// LeaseMargin is what New keeps for the time between a claim and its
	// tool's start: a claim that has at least the rest left may start.
	if !it.renewFailed && time.Duration(it.cl.leaseEnd-monoNow()) < e.leaseNeed(in.ToolName)-LeaseMargin {
		if it.cl.reclaimed {
			it.renewFailed = true // never released: see renew
		} else {
			pl.renew([]*item{it})
		}
	}
	if it.renewFailed {
		// Another owner may hold it now (one came between the renewal's
		// release and its claim), or its own reclaimed claim runs out:
		// it waits for its claim aside, as one found in flight does.
		it.kind, it.renewFailed, it.inFlight, it.claimErr = kindProcess, false, true, nil
		go pl.awaitClaim(it)
		return false
	}
	ctx := pl.work
	if it.d.Deliveries > 0 {
		ctx = WithDeliveryCount(ctx, it.d.Deliveries)
	}
	cl := it.cl
	if !cl.reclaimed {
		cl.batch = it // the completer writes its completion with others'
	}
	// A reclaimed intent (its earlier owner stopped between claim and
	// completion) is completed alone, before this worker takes another:
	// left to the completer's next batch, a crash that recurs (a poison
	// intent right behind it) would cut it between its run and its
	// completion each time, until WithMaxAttempts gave it up. Reclaims are
	// rare, so this costs the common path nothing.
	ctx, span := e.tel.start(ctx, in)
	var res intent.Result
	var err error
	if n := max(it.cl.attempts, deliveryCount(ctx)); n > e.cfg.maxAttempts {
		res, err = e.giveUp(ctx, in, cl, n)
	} else {
		// waited: it may have expired while it waited for a worker.
		res, err = e.executeClaimed(ctx, in, cl, true)
	}
	e.tel.end(ctx, span, in, res, err)
	if de := (*DetachedError)(nil); errors.As(err, &de) {
		if it.owner.CompareAndSwap(ownerWorker, ownerAbandoned) {
			pl.left(it) // its result is completed when the tool returns; redelivery answers it
		}
		return true
	}
	if it.owner.Load() == ownerCompleter {
		return true // the completer publishes it once durable
	}
	if err == nil {
		it.res = res // durable already (an effect's transaction)
		pl.comp.addDone(it)
		return true
	}
	// Nothing is recorded: the claim is released, or left to lapse.
	pl.process(it)
	return true
}

// process takes it the whole of Process's way, retrying until it has a
// result or Serve stops, and hands the result on for publication.
func (pl *pipeline) process(it *item) {
	s, d := pl.s, it.d
	it.kind = kindProcess
	pctx := pl.work
	if d.Deliveries > 0 {
		pctx = WithDeliveryCount(pctx, d.Deliveries)
	}
	ok := s.retry(pl.work, pl.stop, d, "processing", func() error {
		var err error
		it.res, err = s.p.Process(pctx, d.Intent)
		var re *RefusedError
		if errors.As(err, &re) && re.SinkErr == nil {
			it.refused = true // dead-lettered: no result, and nothing to redeliver
			return nil
		}
		if nd := (*NonDeterministicError)(nil); errors.As(err, &nd) {
			return nil // REJECTED: publish it, and redeliver nothing
		}
		return err
	})
	if !ok {
		pl.left(it)
		return
	}
	pl.comp.addDone(it)
}

// left counts an item that leaves the pipeline without being handed
// to the finisher.
func (pl *pipeline) left(it *item) {
	pl.abandon(it)
	if pl.s.processing.Add(-1) <= 0 {
		pl.fin.poke() // no more results are coming to wait for
	}
}

// keepLeases renews, until done is closed, the leases of claimed items
// waiting for a worker before they run low: every lease/8 it renews those
// whose lease has less left than their tool may take plus two ticks.
func (pl *pipeline) keepLeases(done <-chan struct{}) {
	tick := max(pl.e.cfg.lease/8, time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	var low []*item
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		pl.wmu.Lock()
		now := monoNow()
		low = low[:0]
		for it := range pl.waiting {
			if !it.renewFailed && !it.cl.reclaimed && time.Duration(it.cl.leaseEnd-now) < pl.e.leaseNeed(it.d.Intent.ToolName)+2*tick {
				low = append(low, it)
			}
		}
		if len(low) > 0 {
			pl.renew(low)
		}
		pl.wmu.Unlock()
		clear(low)
	}
}

// renew gives each item's claim a fresh lease: it releases the claim (which
// gives its attempt back: nothing ran) and claims the intent again. An item
// whose release or claim fails, or whose intent another owner took in
// between, is marked renewFailed, for Process's way: it waits for that owner,
// or for its own claim to lapse.
//
// A reclaimed claim is never renewed: its release would tell the store that
// nothing of an earlier owner is unaccounted for, and a crash before the new
// claim would let the next owner run the intent without saying its effect is
// unknown. It keeps its lease; if that runs low before a worker takes it,
// it goes Process's way, which waits for it to lapse and reclaims it.
func (pl *pipeline) renew(items []*item) {
	e := pl.e
	rels := make([]Release, len(items))
	errs := make([]error, len(items))
	for i, it := range items {
		rels[i] = Release{IntentID: it.d.Intent.ID, Token: it.cl.token}
	}
	sctx, cancel := e.storeContext(pl.work)
	e.store.ReleaseBatch(sctx, rels, errs)
	cancel()
	var again []*item
	var reqs []ClaimRequest
	for i, it := range items {
		if errs[i] != nil {
			e.cfg.logger.WarnContext(pl.work, "effector: renewing the lease of a claimed intent waiting for a worker: its release failed; it waits for its claim to lapse", "intent_id", it.d.Intent.ID, "error", errs[i].Error())
			it.renewFailed = true
			continue
		}
		again = append(again, it)
		reqs = append(reqs, ClaimRequest{IntentID: it.d.Intent.ID, Call: it.call, Lease: e.cfg.lease})
	}
	if len(reqs) == 0 {
		return
	}
	outs := make([]ClaimOutcome, len(reqs))
	leaseEnd := monoNow() + int64(e.cfg.lease)
	sctx, cancel = e.storeContext(pl.work)
	e.store.ClaimBatch(sctx, reqs, outs)
	cancel()
	for i, it := range again {
		o := outs[i]
		if o.Err != nil || o.Claim.State != Claimed {
			it.renewFailed = true
			continue
		}
		it.cl.token, it.cl.leaseEnd, it.cl.attempts = o.Claim.Token, leaseEnd, o.Claim.Attempts
		it.cl.reclaimed = it.cl.reclaimed || o.Claim.Reclaimed
	}
}

// publish hands a durable item to the sink and then the finisher, in the
// completer's publisher goroutine, in the order items reached the
// completer. A StagedSink (jsonl's Sink, the transports' Sinks) stages it
// here, and the finisher waits for it; with more than one worker, another
// sink's Publish runs in the finisher, beside the others'.
func (pl *pipeline) publish(it *item) {
	s := pl.s
	fi := &finishItem{d: it.d, res: it.res, refused: it.refused}
	if !it.refused {
		var publish func() error
		switch ss, staged := s.sink.(StagedSink); {
		case staged:
			publish = func() (err error) {
				fi.wait, err = ss.Stage(pl.work, fi.res)
				return err
			}
		case s.cfg.workers == 1:
			publish = func() error { return s.sink.Publish(pl.work, fi.res) }
		default:
			fi.wait = func() error { return s.sink.Publish(pl.work, fi.res) }
			fi.publish = true
		}
		if publish != nil && !s.retry(pl.work, pl.stop, it.d, "publishing the result of", publish) {
			pl.left(it)
			return
		}
	}
	pl.release(it)
	pl.finishing <- struct{}{}
	pl.fin.add(fi, s.processing.Add(-1) > 0)
}

// completer writes the results the workers hand it in batches, one
// CompleteBatch for what is waiting (up to maxCompleteBatch), with no timer:
// a lone result is written at once, and results gather while a write is
// under way. Its publisher publishes each result once its completion is
// durable, in the order they were handed to it. A completion that fails is
// retried with backoff until its lease ends, beside the later ones, never
// ahead of them: a result the store keeps refusing does not hold the others
// back. While every completion of a batch fails, the workers start no more
// tools (waitHealthy).
type completer struct {
	pl      *pipeline
	mu      sync.Mutex
	space   *sync.Cond // the backlog shrank
	queue   []*item    // completions to write, in order
	retry   []*item    // completions that failed, each with its next try
	order   []*item    // what to publish, in order, until durable
	pubq    []*item    // durable, in order, until the publisher has published them
	pubWake *sync.Cond // pubq grew, or the completer exited
	running int        // goroutines that will hand an item back (recordLate, Process's way)
	exited  bool
	closed  bool
	failing atomic.Bool
	wake    chan struct{}
	done    chan struct{}
	pubDone chan struct{}

	batch []*item // the loop's buffers
	reqs  []Completion
	errs  []error
}

func newCompleter(pl *pipeline) *completer {
	c := &completer{pl: pl, wake: make(chan struct{}, 1), done: make(chan struct{}), pubDone: make(chan struct{})}
	c.space = sync.NewCond(&c.mu)
	c.pubWake = sync.NewCond(&c.mu)
	go c.loop()
	go c.publisher()
	return c
}

func (c *completer) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *completer) backlog() int {
	return len(c.queue) + len(c.retry) + len(c.order) + len(c.pubq)
}

// add takes the completion of it's claim (it.cl, which the worker ran it
// under) with result b (copied) for ttl, and returns true; false once the
// completer has stopped, when the caller completes it alone. It waits while
// the backlog is full.
func (c *completer) add(it *item, b []byte, ttl time.Duration, res intent.Result) bool {
	c.mu.Lock()
	for c.backlog() >= maxBacklog && !c.exited {
		c.space.Wait()
	}
	if c.exited {
		c.mu.Unlock()
		return false
	}
	it.wire = append(it.wire[:0], b...)
	it.ttl, it.res = ttl, res
	it.backoff, it.tries, it.pub = c.pl.e.cfg.minBackoff, 0, pubPending
	it.publish = it.owner.CompareAndSwap(ownerWorker, ownerCompleter)
	c.queue = append(c.queue, it)
	if it.publish {
		c.order = append(c.order, it)
	}
	c.mu.Unlock()
	c.poke()
	return true
}

// addDone takes an item whose result needs no completion (it is durable,
// or never stored) for publication.
func (c *completer) addDone(it *item) {
	c.mu.Lock()
	for c.backlog() >= maxBacklog {
		c.space.Wait()
	}
	it.pub = pubReady
	c.order = append(c.order, it)
	c.mu.Unlock()
	c.poke()
}

// waitHealthy returns once the store completes again (or work ends).
func (c *completer) waitHealthy(work context.Context) {
	for c.failing.Load() && work.Err() == nil {
		t := time.NewTimer(c.pl.s.cfg.minBackoff)
		select {
		case <-t.C:
		case <-work.Done():
			t.Stop()
		}
	}
}

// close returns once everything handed to the completer is written and
// handed on (or given up).
func (c *completer) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.poke()
	<-c.done
	<-c.pubDone
}

// publisher publishes the durable results the completer hands it, in
// order, in a goroutine of its own: a sink or an acknowledgement that keeps
// failing (publish retries it) holds back the publication of what follows,
// never the writing of completions, whose leases would run out meanwhile.
// The results waiting here count in the backlog, so the workers stop when
// it fills.
func (c *completer) publisher() {
	defer close(c.pubDone)
	var ready []*item
	for {
		c.mu.Lock()
		for len(c.pubq) == 0 && !c.exited {
			c.pubWake.Wait()
		}
		if len(c.pubq) == 0 {
			c.mu.Unlock()
			return
		}
		ready = append(ready[:0], c.pubq...)
		c.mu.Unlock()
		for _, it := range ready {
			c.pl.publish(it)
		}
		c.mu.Lock()
		rest := copy(c.pubq, c.pubq[len(ready):])
		clear(c.pubq[rest:])
		c.pubq = c.pubq[:rest]
		c.space.Broadcast()
		c.mu.Unlock()
		clear(ready)
		c.poke() // the completer may be waiting for the backlog to empty
	}
}

func (c *completer) loop() {
	defer close(c.done)
	var timer *time.Timer
	for {
		c.mu.Lock()
		now := monoNow()
		batch := c.batch[:0]
		var next int64
		keep := c.retry[:0]
		for _, it := range c.retry { // the older first
			if it.nextTry <= now && len(batch) < maxCompleteBatch {
				batch = append(batch, it)
				continue
			}
			keep = append(keep, it)
			if next == 0 || it.nextTry < next {
				next = it.nextTry
			}
		}
		clear(c.retry[len(keep):])
		c.retry = keep
		n := min(len(c.queue), maxCompleteBatch-len(batch))
		batch = append(batch, c.queue[:n]...)
		rest := copy(c.queue, c.queue[n:])
		clear(c.queue[rest:])
		c.queue = c.queue[:rest]
		k, handed := 0, false
		for k < len(c.order) && c.order[k].pub != pubPending {
			if c.order[k].pub == pubReady {
				c.pubq = append(c.pubq, c.order[k])
				handed = true
			}
			k++
		}
		rest = copy(c.order, c.order[k:])
		clear(c.order[rest:])
		c.order = c.order[:rest]
		if handed {
			c.pubWake.Signal()
		}
		if len(batch) > 0 || k > 0 {
			c.space.Broadcast()
		}
		if len(batch) == 0 && c.closed && c.backlog() == 0 && c.running == 0 {
			c.exited = true
			c.space.Broadcast()
			c.pubWake.Signal()
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if len(batch) > 0 {
			c.write(batch)
		}
		clear(batch)
		c.batch = batch
		if len(batch) > 0 || handed {
			continue
		}
		if next == 0 {
			<-c.wake
			continue
		}
		wait := time.Duration(next - monoNow())
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-c.wake:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// write completes batch in one CompleteBatch and settles each item.
func (c *completer) write(batch []*item) {
	e, work := c.pl.e, c.pl.work
	reqs, errs := c.reqs[:0], c.errs[:0]
	for _, it := range batch {
		reqs = append(reqs, Completion{IntentID: it.d.Intent.ID, Token: it.cl.token, Result: it.wire, TTL: it.ttl})
		errs = append(errs, nil)
	}
	sctx, cancel := e.storeContext(work)
	e.store.CompleteBatch(sctx, reqs, errs)
	cancel()
	ok, failed := false, false
	now := monoNow()
	c.mu.Lock()
	for i, it := range batch {
		err := errs[i]
		it.tries++
		switch {
		case err == nil:
			ok = true
			it.pub = pubReady
			if !it.publish {
				it.pub = pubDropped
			}
		case errors.Is(err, ErrNotOwner):
			c.running++
			go c.late(it)
		default:
			failed = true
			wait := min(it.backoff, time.Duration(it.cl.leaseEnd-now))
			if wait <= 0 {
				c.running++
				go c.unrecorded(it, err)
				continue
			}
			e.storeRetry(work, nil, "complete", it.d.Intent.ID, it.tries, err, wait) // telemetry.go: logged and counted
			it.nextTry = now + int64(wait)
			it.backoff = min(2*it.backoff, e.cfg.maxBackoff)
			c.retry = append(c.retry, it)
		}
	}
	// The store fails while a batch's every completion failed, until one
	// succeeds or none is left to retry (those given up are Process's now;
	// the next tool's completion tries the store again).
	switch {
	case ok || len(c.retry) == 0:
		c.failing.Store(false)
	case failed:
		c.failing.Store(true)
	}
	c.mu.Unlock()
	clear(reqs)
	c.reqs, c.errs = reqs, errs[:0]
}

// late settles a completion the store refused because the claim's lease
// ended first: as Process does (recordLate), the stored result if another
// owner finished it, else this one, claimed again.
func (c *completer) late(it *item) {
	e, in := c.pl.e, it.d.Intent
	res, err := e.recordLate(c.pl.work, in, it.wire, it.res, it.ttl, it.cl.attempts)
	c.settle(it, res, err)
}

// unrecorded gives up a completion that failed until its lease ended: the
// intent takes Process's way again (its next claim runs it as reclaimed),
// unless Serve is stopping.
func (c *completer) unrecorded(it *item, err error) {
	e := c.pl.e
	uerr := e.unrecorded(c.pl.work, it.d.Intent, it.res, it.tries, err)
	c.settle(it, intent.Result{}, uerr)
}

// settle ends a goroutine of the completer's with the item's result, or
// with the error that leaves it to Process's way.
func (c *completer) settle(it *item, res intent.Result, err error) {
	if err == nil || !it.publish {
		c.mu.Lock()
		it.res, it.pub = res, pubReady
		if err != nil || !it.publish {
			it.pub = pubDropped
		}
		c.running--
		c.mu.Unlock()
		c.poke()
		return
	}
	// Its place in the order is given up, and Process's way hands it back.
	next := &item{pl: c.pl, d: it.d, kind: kindProcess}
	c.mu.Lock()
	it.pub = pubDropped
	c.mu.Unlock()
	c.pl.process(next)
	c.mu.Lock()
	c.running--
	c.mu.Unlock()
	c.poke()
}
