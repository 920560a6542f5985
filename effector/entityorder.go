package effector

import (
	"slices"
	"sync"
)

// WithEntityOrder makes Serve run the intents of one entity key one at a
// time, in the order of their seq and step: a later intent of the entity
// starts only once the earlier one's result is durable (its completion
// written), not merely once it started; intents of different entities
// still run in parallel, on WithWorkers workers. It orders what Serve holds
// at once, received and not answered: a source that delivers an entity's
// intents out of order, a batch apart, has them run in the order they came.
// An approval's intent counts as done once the approval is requested: the
// approved call, run later by Decide, Resume or WithDecisions, is not held
// in the entity's order.
//
// Off by default: intents staged by one activation (one entity key, one
// seq) are independent calls the model made at once, and most services want
// them run in parallel; ordering them costs a completion's round trip between
// an entity's intents. Turn it on where an entity's calls depend on each
// other ("create the order", then "charge the card").
func WithEntityOrder(on bool) ServeOption {
	return func(c *serveConfig) { c.entityOrder = on }
}

// entities is WithEntityOrder's state: the entity keys with an intent in
// flight, each with the intents waiting behind it, in (seq, step) order.
type entities struct {
	mu      sync.Mutex
	idle    *sync.Cond // no intent is waiting
	waiting map[string][]*item
	n       int             // intents waiting, in all
	dropped map[string]bool // entities whose intent left unanswered: the rest are left too
}

func newEntities() *entities {
	es := &entities{waiting: map[string][]*item{}, dropped: map[string]bool{}}
	es.idle = sync.NewCond(&es.mu)
	return es
}

// before reports whether a runs before b in an entity's order.
func before(a, b *item) bool {
	x, y := a.d.Intent, b.d.Intent
	return x.Seq < y.Seq || x.Seq == y.Seq && x.StepIndex < y.StepIndex
}

// orderBatch sorts, in place, the intents of each entity of items by seq
// and step, leaving every other item where it was.
func orderBatch(items []*item) {
	at := map[string][]int{}
	for i, it := range items {
		if it.d.Intent != nil {
			k := string(it.d.Intent.EntityKey)
			at[k] = append(at[k], i)
		}
	}
	var group []*item
	for _, is := range at {
		if len(is) < 2 {
			continue
		}
		group = group[:0]
		for _, i := range is {
			group = append(group, items[i])
		}
		slices.SortStableFunc(group, func(a, b *item) int {
			switch {
			case before(a, b):
				return -1
			case before(b, a):
				return 1
			}
			return 0
		})
		for k, i := range is {
			items[i] = group[k]
		}
	}
}

// dispatch hands it to the workers, or, with WithEntityOrder, queues it
// behind its entity's intent in flight.
func (pl *pipeline) dispatch(it *item) {
	es := pl.ents
	if es == nil || it.d.Intent == nil {
		pl.jobs <- it
		return
	}
	k := string(it.d.Intent.EntityKey)
	es.mu.Lock()
	if es.dropped[k] {
		es.mu.Unlock()
		pl.drop(it)
		return
	}
	if q, busy := es.waiting[k]; busy {
		// After every waiting intent that does not come after it.
		i, _ := slices.BinarySearchFunc(q, it, func(w, it *item) int {
			if before(it, w) {
				return 1
			}
			return -1
		})
		es.waiting[k] = slices.Insert(q, i, it)
		es.n++
		es.mu.Unlock()
		return
	}
	es.waiting[k] = nil // in flight, none waiting
	es.mu.Unlock()
	pl.jobs <- it
}

// release tells WithEntityOrder that it has left the pipeline (its result
// is durable and published, or it was given up), and hands the next intent
// of its entity to the workers. The jobs channel has room for it: every
// intent waiting holds one of the receiver's slots.
func (pl *pipeline) release(it *item) {
	es := pl.ents
	if es == nil || it.d.Intent == nil {
		return
	}
	k := string(it.d.Intent.EntityKey)
	es.mu.Lock()
	q := es.waiting[k]
	if len(q) == 0 {
		delete(es.waiting, k)
		es.mu.Unlock()
		return
	}
	next := q[0]
	es.waiting[k] = q[1:]
	es.mu.Unlock()
	pl.jobs <- next
	// Counted out only once it is with the workers: Serve closes the
	// channel once none is waiting (waitIdle).
	es.mu.Lock()
	if es.n--; es.n == 0 {
		es.idle.Broadcast()
	}
	es.mu.Unlock()
}

// abandon tells WithEntityOrder that it left the pipeline unanswered (Serve
// is stopping: its tool may still run, detached): the intents of its entity
// waiting behind it are left unanswered too, their claims released, for
// redelivery, so that none runs before it.
func (pl *pipeline) abandon(it *item) {
	es := pl.ents
	if es == nil || it.d.Intent == nil {
		return
	}
	k := string(it.d.Intent.EntityKey)
	es.mu.Lock()
	q := es.waiting[k]
	es.waiting[k] = nil
	es.dropped[k] = true
	es.n -= len(q)
	if es.n == 0 {
		es.idle.Broadcast()
	}
	es.mu.Unlock()
	for _, w := range q {
		pl.drop(w)
	}
}

// drop leaves w unanswered without running it, releasing its claim; a
// reclaimed claim is left to lapse instead, so that the store still says an
// earlier owner may have run it (see renew).
func (pl *pipeline) drop(w *item) {
	if w.kind == kindClaimed {
		pl.wmu.Lock()
		delete(pl.waiting, w)
		pl.wmu.Unlock()
	}
	if w.kind == kindClaimed && !w.cl.reclaimed {
		sctx, cancel := pl.e.storeContext(pl.work)
		if err := pl.e.store.Release(sctx, w.d.Intent.ID, w.cl.token); err != nil {
			pl.e.cfg.logger.WarnContext(pl.work, "effector: releasing claim", "intent_id", w.d.Intent.ID, "error", err.Error())
		}
		cancel()
	}
	pl.s.log.WarnContext(pl.work, "effector: intent left unanswered: an earlier intent of its entity was (WithEntityOrder)", "intent_id", w.d.Intent.ID, "pos", w.d.Pos)
	if pl.s.processing.Add(-1) <= 0 {
		pl.fin.poke()
	}
	<-pl.slots // it never reaches a worker, which would give its slot back
}

// waitIdle returns once no intent waits behind another of its entity: then
// every intent received is with the workers, and the jobs channel may close.
func (es *entities) waitIdle() {
	if es == nil {
		return
	}
	es.mu.Lock()
	for es.n > 0 {
		es.idle.Wait()
	}
	es.mu.Unlock()
}
