// Package staged lets a sink publish in two steps (effector.StagedSink):
// Stage queues an item at once and returns a wait; the first wait called
// writes every item staged by then in one round trip, and each wait that
// write covered returns its item's outcome, the later ones at once. Writes
// run one at a time, in the order their items were staged. There is no
// timer: a lone item is written as soon as it is waited for, and items
// gather while a write is under way, so the batch grows with the load (as
// jsonl.Sink shares one fsync among the lines staged before it).
//
// It refuses nothing; a sink encodes and checks an item before staging it.
package staged

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Writer stages items and writes them in batches with its write function.
// It is safe for concurrent use. The zero Writer is not usable: make one
// with New.
type Writer[T any] struct {
	write func(ctx context.Context, items []T, errs []error)

	mu   sync.Mutex
	open *batch[T] // the items staged since the last write was taken

	writeMu sync.Mutex // one write at a time, batches in staged order

	Writes atomic.Int64 // round trips so far, for tests and benchmarks
}

// batch is the items one write carries.
type batch[T any] struct {
	items []T
	ctxs  []context.Context // each item's Stage context
	errs  []error           // each item's outcome, once done
	done  atomic.Bool
}

// New returns a Writer whose waits write with write, which gets the items of
// one batch, in staged order, and sets errs[i] (nil on entry) to item i's
// outcome: the same error for all of them if the round trip failed, or each
// item's own where the store answers item by item. ctx is the items' Stage
// context when they share one (Serve stages with one); otherwise no single
// caller's cancellation ends it, and it ends at the latest of their
// deadlines if each has one.
func New[T any](write func(ctx context.Context, items []T, errs []error)) *Writer[T] {
	return &Writer[T]{write: write}
}

// Stage queues v to be written by the next write and returns what waits for
// that write and returns v's outcome. It fails only when ctx has ended. An
// item whose ctx has ended by the time its batch is written is not written:
// its wait returns ctx's error.
func (w *Writer[T]) Stage(ctx context.Context, v T) (wait func() error, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w.mu.Lock()
	b := w.open
	if b == nil {
		b = &batch[T]{}
		w.open = b
	}
	i := len(b.items)
	b.items = append(b.items, v)
	b.ctxs = append(b.ctxs, ctx)
	w.mu.Unlock()
	return func() error { return w.wait(b, i) }, nil
}

// Do stages v and waits for it: a publish in one step.
func (w *Writer[T]) Do(ctx context.Context, v T) error {
	wait, err := w.Stage(ctx, v)
	if err != nil {
		return err
	}
	return wait()
}

// wait returns item i of b's outcome, writing b first unless a write has.
func (w *Writer[T]) wait(b *batch[T], i int) error {
	if b.done.Load() {
		return b.errs[i]
	}
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	if !b.done.Load() {
		// b is still the open batch: batches are taken in the order they
		// were opened, and each is done before the next is taken.
		w.mu.Lock()
		w.open = nil
		w.mu.Unlock()
		w.flush(b)
		b.done.Store(true)
	}
	return b.errs[i]
}

// flush writes b's items whose contexts are alive, in one call of write.
func (w *Writer[T]) flush(b *batch[T]) {
	b.errs = make([]error, len(b.items))
	items, ctxs, live := b.items, b.ctxs, true
	for _, c := range b.ctxs {
		if c.Err() != nil {
			live = false
			break
		}
	}
	if !live {
		// The rare case: some callers gave up. Write the others.
		items, ctxs = nil, nil
		var at []int
		for i, c := range b.ctxs {
			if err := c.Err(); err != nil {
				b.errs[i] = err
				continue
			}
			items, ctxs, at = append(items, b.items[i]), append(ctxs, c), append(at, i)
		}
		if len(items) == 0 {
			return
		}
		errs := make([]error, len(items))
		w.run(items, ctxs, errs)
		for k, i := range at {
			b.errs[i] = errs[k]
		}
		return
	}
	w.run(items, ctxs, b.errs)
}

func (w *Writer[T]) run(items []T, ctxs []context.Context, errs []error) {
	ctx, cancel := batchContext(ctxs)
	defer cancel()
	w.Writes.Add(1)
	w.write(ctx, items, errs)
}

// batchContext is the context of a write carrying items staged with ctxs:
// the one context when they share it (Serve stages with one), else one that
// no single caller can end (its cancellation or short deadline would fail
// the others' items) and that ends at the latest of their deadlines if each
// has one.
func batchContext(ctxs []context.Context) (context.Context, context.CancelFunc) {
	first, same := ctxs[0], true
	for _, c := range ctxs[1:] {
		if c != first {
			same = false
			break
		}
	}
	if same {
		return first, func() {}
	}
	var latest time.Time
	for _, c := range ctxs {
		d, ok := c.Deadline()
		if !ok {
			return context.WithCancel(context.WithoutCancel(first))
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(first), latest)
}
