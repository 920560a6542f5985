// Package groupcommit lets concurrent callers share one round trip to a
// store: each call is an op queued on a Group; the first caller to find no
// batch in progress leads, taking every queued op (up to the group's size)
// and handing them to the group's commit function at once. Ops that arrive
// while a batch runs queue, and when it is done the first of them leads the
// next batch. So a caller alone runs at once, with no added delay, and the
// batch grows with the load. A caller returns only when the batch holding its
// op is done, with its op's own error.
package groupcommit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Op is one call waiting for its batch. The commit function reads In and
// sets Err (and whatever the caller reads back in In).
type Op[T any] struct {
	Ctx context.Context // the caller's; an op whose ctx has ended is still handed over: check it
	In  T
	Err error

	signal   chan struct{} // buffered 1: finished, or made leader
	finished bool
	leader   bool
}

// Group queues ops and elects their leaders. The zero Group is not usable:
// make one with New.
type Group[T any] struct {
	size   int
	delay  time.Duration
	commit func(batch []*Op[T])
	stream func(batch []*Op[T], more func() []*Op[T])

	mu      sync.Mutex
	queue   []*Op[T]
	leading bool
	busy    int           // callers the last batch released plus those that queued while it ran
	arrived chan struct{} // buffered 1: an op was queued, for a lingering leader

	Batches, Ops atomic.Int64 // committed so far, for benchmarks and tests
}

// New returns a group that hands batches of at most size ops to commit,
// which must set each op's Err.
func New[T any](size int, commit func(batch []*Op[T])) *Group[T] {
	return &Group[T]{size: max(size, 1), commit: commit, arrived: make(chan struct{}, 1)}
}

// NewStream returns a group whose leader hands commit the ops queued when
// it took over, at once, and more, which returns the ops queued since (up to
// the group's size in all), first waiting for them as WithLinger says, or
// nil when no more are coming: commit runs the first ops while the rest are
// on their way, instead of idling until they are all there. commit must set
// the Err of every op it was given, by either.
func NewStream[T any](size int, commit func(batch []*Op[T], more func() []*Op[T])) *Group[T] {
	return &Group[T]{size: max(size, 1), stream: commit, arrived: make(chan struct{}, 1)}
}

// WithLinger makes a leader wait, before taking its batch, while the batch
// is not full and more ops are on their way, for at most delay: until the
// callers the last batch released are back (likely soon, with their next op:
// a claim's caller with its completion, say) beside those that queued while
// it ran. Without it, ops queued a moment after a batch is
// taken wait for the whole next commit, so each op waits nearly two. A
// caller alone never waits: the last batch held only its op. When the load
// drops, a leader waits at most delay once, and the next batch is sized
// by what came. It returns g.
func (g *Group[T]) WithLinger(delay time.Duration) *Group[T] {
	g.delay = delay
	return g
}

// wake tells a lingering leader that something changed.
func (g *Group[T]) wake() {
	select {
	case g.arrived <- struct{}{}:
	default:
	}
}

// Do queues in as an op, waits for its batch, and returns the op once done:
// with Err set by the commit function, or ctx's error if ctx ended before a
// batch took it (then it was never handed to commit).
func (g *Group[T]) Do(ctx context.Context, in T) *Op[T] {
	o := &Op[T]{Ctx: ctx, In: in, signal: make(chan struct{}, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, o)
	if !g.leading {
		g.leading = true
		o.leader = true
	}
	lead := o.leader
	g.mu.Unlock()
	if !lead {
		g.wake()
	}
	for {
		if lead {
			g.lead(o)
		}
		select {
		case <-o.signal:
		case <-ctx.Done():
			if g.abandon(o) {
				o.Err = ctx.Err()
				return o
			}
			<-o.signal
		}
		g.mu.Lock()
		finished := o.finished
		lead = o.leader
		g.mu.Unlock()
		if finished {
			return o
		}
	}
}

// DoAll queues ins as ops, one after another with no other caller's op
// between them, and returns them once every one is done: each with Err set
// by the commit function, or ctx's error if ctx ended before a batch took
// it (then it was never handed to commit). Batches take them as any ops, up
// to the group's size each: so more ops than the size, or ops queued behind
// others, go in more than one batch, in their order. The caller leads any
// batch one of its ops is elected to lead, as Do's caller does.
func (g *Group[T]) DoAll(ctx context.Context, ins []T) []*Op[T] {
	if len(ins) == 0 {
		return nil
	}
	// One signal for all: the caller checks every op's state when woken.
	signal := make(chan struct{}, 1)
	ops := make([]*Op[T], len(ins))
	for i := range ins {
		ops[i] = &Op[T]{Ctx: ctx, In: ins[i], signal: signal}
	}
	g.mu.Lock()
	g.queue = append(g.queue, ops...)
	if !g.leading {
		g.leading = true
		ops[0].leader = true
	}
	lead := ops[0].leader
	g.mu.Unlock()
	if !lead {
		g.wake()
	}
	done := ctx.Done()
	for {
		g.mu.Lock()
		var lead *Op[T]
		left := 0
		for _, o := range ops {
			if o.leader {
				lead = o
			}
			if !o.finished {
				left++
			}
		}
		g.mu.Unlock()
		if done != nil && ctx.Err() != nil {
			// Ended while this caller led a batch: the ops still queued
			// are not handed over.
			g.abandonAll(ops, ctx.Err())
			done = nil
			continue
		}
		if lead != nil {
			g.lead(lead)
			continue
		}
		if left == 0 {
			return ops
		}
		select {
		case <-signal:
		case <-done:
			g.abandonAll(ops, ctx.Err())
			done = nil // wait on for the ops a batch has taken
		}
	}
}

// abandonAll takes out of the queue those of ops still in it, finishing
// each with err, and hands leadership on if one of them held it.
func (g *Group[T]) abandonAll(ops []*Op[T], err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	mine := make(map[*Op[T]]bool, len(ops))
	for _, o := range ops {
		mine[o] = true
	}
	handOff := false
	kept := g.queue[:0]
	for _, q := range g.queue {
		if !mine[q] {
			kept = append(kept, q)
			continue
		}
		q.Err, q.finished = err, true
		if q.leader {
			q.leader, handOff = false, true
		}
	}
	clear(g.queue[len(kept):])
	g.queue = kept
	if handOff {
		g.handOff()
	}
}

// Queued is how many ops wait for a batch, for tests.
func (g *Group[T]) Queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// Leading reports whether a batch is forming or running, for tests.
func (g *Group[T]) Leading() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leading
}

func (g *Group[T]) abandon(o *Op[T]) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if o.finished {
		return false
	}
	for i, q := range g.queue {
		if q != o {
			continue
		}
		g.queue = append(g.queue[:i], g.queue[i+1:]...)
		if o.leader {
			g.handOff()
		}
		return true
	}
	return false
}

// handOff makes the first queued op's caller the next leader, or ends
// leading. g.mu is held.
func (g *Group[T]) handOff() {
	if len(g.queue) == 0 {
		g.leading = false
		return
	}
	next := g.queue[0]
	next.leader = true
	select {
	case next.signal <- struct{}{}:
	default:
	}
}

func (g *Group[T]) lead(self *Op[T]) {
	g.mu.Lock()
	self.leader = false
	deadline := time.Now().Add(g.delay)
	want := min(g.busy, g.size)
	var batch []*Op[T]
	if g.stream == nil {
		g.linger(deadline, want, 0)
		batch = g.take(0)
		g.mu.Unlock()
		g.commit(batch)
	} else {
		batch = g.take(0)
		g.mu.Unlock()
		g.stream(batch, func() []*Op[T] {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.linger(deadline, want, len(batch))
			more := g.take(len(batch))
			batch = append(batch, more...)
			return more
		})
	}
	n := len(batch)
	g.Batches.Add(1)
	g.Ops.Add(int64(n))

	g.mu.Lock()
	g.busy = n + len(g.queue)
	for _, o := range batch {
		o.finished = true
		select {
		case o.signal <- struct{}{}:
		default:
		}
	}
	g.handOff()
	g.mu.Unlock()
	select {
	case self.signal <- struct{}{}:
	default:
	}
}

// linger waits, as WithLinger says, while a batch that has taken have ops
// could take more: until deadline, while fewer than want ops are taken or
// queued. g.mu is held.
func (g *Group[T]) linger(deadline time.Time, want, have int) {
	if g.delay <= 0 {
		return
	}
	for n := have + len(g.queue); n < g.size && n < want; n = have + len(g.queue) {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		g.mu.Unlock()
		t := time.NewTimer(left)
		select {
		case <-g.arrived:
		case <-t.C:
		}
		t.Stop()
		g.mu.Lock()
	}
}

// take removes from the queue as many ops as a batch that has taken have may
// still take, and returns them (nil if none). g.mu is held.
func (g *Group[T]) take(have int) []*Op[T] {
	n := min(len(g.queue), g.size-have)
	if n <= 0 {
		return nil
	}
	ops := make([]*Op[T], n)
	copy(ops, g.queue)
	g.queue = append(g.queue[:0], g.queue[n:]...)
	return ops
}

// Live sets ctx's error as Err of each op whose caller's context has ended,
// and returns the others, in their order: a commit function hands only these
// to the store.
func Live[T any](batch []*Op[T]) []*Op[T] {
	live := make([]*Op[T], 0, len(batch))
	for _, o := range batch {
		if err := o.Ctx.Err(); err != nil {
			o.Err = err
			continue
		}
		live = append(live, o)
	}
	return live
}

// Context is the context for a round trip carrying ops, which is every
// op's: no one caller can end it (its cancellation or a short deadline would
// fail the other callers' ops), and it ends at the latest of their deadlines
// if each has one. ops must not be empty.
func Context[T any](ops []*Op[T]) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, o := range ops {
		d, ok := o.Ctx.Deadline()
		if !ok {
			return context.WithCancel(context.WithoutCancel(ops[0].Ctx))
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(ops[0].Ctx), latest)
}
