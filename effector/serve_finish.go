package effector

import (
	"context"
	"sync"
	"time"
)

// finisher finishes the intents Serve's workers hand off, in batches: it
// takes every intent handed off by then, waits for their results to be
// durable (the first wait writes and fsyncs every result staged by then, so
// the rest return at once), marks them answered in their checkpoint, saves
// the checkpoint once, and counts them answered. Meanwhile the workers go on,
// and what they hand off gathers for the next batch: the batch adapts to the
// load. While other intents are being processed, a batch waits for their
// results up to batchTarget intents or maxBatchDelay; when none is, it starts
// at once, so a lone intent is finished at once, or, handed off while a batch
// is being committed, after that batch's fsync and save.
//
// So the checkpoint is saved once per batch, and only after every result it
// covers is synced: a crash mid-batch leaves it before the batch, whose
// lines are delivered again. It never passes a line not answered, as marking
// moves it only over a contiguous prefix of answered lines (workers finish
// out of order).
//
// Deliveries from other sources (whose Ack cannot be batched) are finished
// one a goroutine, concurrently, as their acknowledgements are round trips
// of their own. A delivery whose fsync or checkpoint save fails leaves the
// batch for that one-a-goroutine path, which retries it with backoff without
// holding up the others: there its Ack is called again, without the batch,
// and returns only once the checkpoint is saved.
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
	batch      []*finishItem  // reused arrays
	mark       []markedItem
}

func newFinisher(s *server, work, stop context.Context, release func()) *finisher {
	f := &finisher{s: s, work: work, stop: stop, release: release, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go f.loop()
	return f
}

// maxBatchDelay is the longest a JSONL batch waits to grow while more
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
	if !it.d.batchAck {
		f.goFinish(it, nil, false)
		return
	}
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
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
	<-f.done
	f.single.Wait()
}

func (f *finisher) goFinish(it *finishItem, waitErr error, waited bool) {
	f.single.Go(func() {
		defer f.release()
		f.s.finish(f.work, f.stop, it, waitErr, waited)
	})
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

// finish finishes one batch. Each delivery's own Ack is called (a source
// may wrap the JSONL source's), with an ackBatch in its context, so that the
// JSONL source's marks the line and leaves the save for once per batch.
func (f *finisher) finish(batch []*finishItem) {
	marked := f.mark[:0]
	ab := &ackBatch{}
	actx := context.WithValue(f.work, ackBatchKey{}, ab)
	for _, it := range batch {
		if it.wait != nil {
			if err := it.wait(); err != nil {
				f.goFinish(it, err, true)
				continue
			}
		}
		ab.ckpt = nil
		if err := ack(actx, it.d); err != nil {
			f.goFinish(it, nil, true) // its Ack, retried without the batch
			continue
		}
		marked = append(marked, markedItem{it, ab.ckpt})
	}
	// Save each checkpoint once (a Serve has one source, so one).
	var ck *checkpoint
	var err error
	for _, m := range marked {
		if m.ckpt != nil && m.ckpt != ck {
			ck = m.ckpt
			err = ck.commit()
		}
		if m.ckpt != nil && err != nil {
			// Its Ack, retried without the batch, retries the save.
			f.goFinish(m.it, nil, true)
			continue
		}
		f.s.answeredOne(f.work, m.it)
		f.release()
	}
	clear(marked)
	f.mark = marked
}

// markedItem is an intent whose Ack marked ckpt (nil: none) in a batch.
type markedItem struct {
	it   *finishItem
	ckpt *checkpoint
}
