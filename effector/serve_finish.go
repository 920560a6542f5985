package effector

import (
	"context"
	"sync"
	"time"
)

// finisher finishes the intents Serve's workers hand off, in batches: it
// takes every intent handed off by then, waits for their results to be
// durable (a staged result's wait: the first writes and fsyncs every result
// staged by then, so the rest return at once), acknowledges those of one
// source with one BatchAcker.AckBatch (one XACK, one DELETE, one checkpoint
// save), and counts them answered. Meanwhile the workers go on, and what
// they hand off gathers for the next batch: the batch adapts to the load.
// While other intents are being processed, a batch waits for their results
// up to batchTarget intents or maxBatchDelay; when none is, it starts at
// once, so a lone intent is finished at once, or, handed off while a batch
// is being acknowledged, after that batch.
//
// So a delivery is acknowledged only after its result is durable, and a
// JSONL file's checkpoint is saved once per batch: a crash mid-batch leaves
// it before the batch, whose lines are delivered again.
//
// A result that a sink publishes whole (a Sink that is no StagedSink, with
// more than one worker) is published in a goroutine of its own, beside the
// others, before its intent joins a batch. Deliveries with no Acker are
// finished one a goroutine, concurrently, as their acknowledgements are
// round trips of their own. A delivery whose result's wait or whose batch's
// AckBatch fails leaves the batch for that one-a-goroutine path, which
// retries it with backoff without holding up the others: there its own Ack
// is called, and it is counted answered once that returns nil.
type finisher struct {
	s          *server
	work, stop context.Context
	release    func() // frees a finishing slot
	mu         sync.Mutex
	queue      []*finishItem
	first      time.Time // when the queue's first intent came
	closed     bool
	wake       chan struct{} // one token: the queue grew or closed
	done       chan struct{}
	single     sync.WaitGroup // one-a-goroutine finishes
	publishing sync.WaitGroup // publishes that then join a batch
	batch      []*finishItem  // reused arrays
	groups     []ackGroup
}

// ackGroup is a batch's intents of one BatchAcker.
type ackGroup struct {
	acker BatchAcker
	items []*finishItem
	ds    []Delivery
}

func newFinisher(s *server, work, stop context.Context, release func()) *finisher {
	f := &finisher{s: s, work: work, stop: stop, release: release, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go f.loop()
	return f
}

// maxBatchDelay is the longest a batch waits to grow while more
// results are coming, and batchTarget the size at which it stops waiting:
// a batch starts at once when no other intent is being processed (a lone
// intent is not delayed), when it holds batchTarget intents, or when its
// first intent has waited maxBatchDelay.
const (
	maxBatchDelay = time.Millisecond
	batchTarget   = 128
)

// add hands it off to be finished; busy says other intents are being
// processed, whose results may join its batch.
func (f *finisher) add(it *finishItem, busy bool) {
	if it.d.Acker == nil {
		f.goFinish(it, nil, false)
		return
	}
	if it.publish {
		// Its wait is a whole Publish, a round trip: run it beside the
		// others', then join a batch.
		f.publishing.Go(func() {
			if err := it.wait(); err != nil {
				f.goFinishHere(it, err)
				return
			}
			it.wait = nil
			f.enqueue(it, f.s.processing.Load() > 0)
		})
		return
	}
	f.enqueue(it, busy)
}

func (f *finisher) enqueue(it *finishItem, busy bool) {
	f.mu.Lock()
	if len(f.queue) == 0 {
		f.first = time.Now()
	}
	f.queue = append(f.queue, it)
	n := len(f.queue)
	f.mu.Unlock()
	if n == 1 || n >= batchTarget || !busy {
		f.poke()
	}
}

// poke wakes the finisher to look at its queue again.
func (f *finisher) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// close returns once everything handed off is finished (or given up).
func (f *finisher) close() {
	f.publishing.Wait() // they may still join a batch
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.poke()
	<-f.done
	f.single.Wait()
}

func (f *finisher) goFinish(it *finishItem, waitErr error, waited bool) {
	f.single.Go(func() {
		defer f.release()
		f.s.finish(f.work, f.stop, it, waitErr, waited)
	})
}

// goFinishHere is goFinish in a goroutine of the finisher's own.
func (f *finisher) goFinishHere(it *finishItem, waitErr error) {
	defer f.release()
	f.s.finish(f.work, f.stop, it, waitErr, true)
}

func (f *finisher) loop() {
	defer close(f.done)
	var timer *time.Timer
	for {
		f.mu.Lock()
		batch, closed, first := f.queue, f.closed, f.first
		if len(batch) > 0 && !closed && len(batch) < batchTarget && f.s.processing.Load() > 0 {
			// More results are coming: let the batch grow a little.
			if left := maxBatchDelay - time.Since(first); left > 0 {
				f.mu.Unlock()
				if timer == nil {
					timer = time.NewTimer(left)
				} else {
					timer.Reset(left)
				}
				select {
				case <-f.wake:
					timer.Stop()
				case <-timer.C:
				}
				continue
			}
		}
		if len(batch) > 0 {
			// Swap buffers: batch and queue never share an array.
			f.queue, f.batch = f.batch[:0], nil
		}
		f.mu.Unlock()
		if len(batch) == 0 {
			if closed {
				return
			}
			<-f.wake
			continue
		}
		f.finish(batch)
		clear(batch)
		f.batch = batch
	}
}

// finish finishes one batch: it waits for each staged result, then
// acknowledges the intents of each BatchAcker (a Serve has one source, so
// mostly one) with one AckBatch.
func (f *finisher) finish(batch []*finishItem) {
	groups := f.groups[:0]
	for _, it := range batch {
		if it.wait != nil {
			if err := it.wait(); err != nil {
				f.goFinish(it, err, true)
				continue
			}
		}
		i := 0
		for i < len(groups) && groups[i].acker != it.d.Acker {
			i++
		}
		if i == len(groups) {
			if i < cap(groups) {
				groups = groups[:i+1]
				groups[i].acker = it.d.Acker
			} else {
				groups = append(groups, ackGroup{acker: it.d.Acker})
			}
		}
		groups[i].items = append(groups[i].items, it)
		groups[i].ds = append(groups[i].ds, it.d)
	}
	for i := range groups {
		g := &groups[i]
		if err := g.acker.AckBatch(f.work, g.ds); err != nil {
			f.s.log.WarnContext(f.work, "effector: acknowledging a batch failed; acknowledging each of its intents alone", "intents", len(g.ds), "error", err.Error())
			for _, it := range g.items {
				f.goFinish(it, nil, true) // its own Ack, retried with backoff
			}
		} else {
			for _, it := range g.items {
				f.s.answeredOne(f.work, it)
				f.release()
			}
		}
		clear(g.items)
		clear(g.ds)
		g.acker, g.items, g.ds = nil, g.items[:0], g.ds[:0]
	}
	f.groups = groups[:0]
}
