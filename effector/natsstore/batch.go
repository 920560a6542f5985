package natsstore

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/effector"
)

// The batch forms answer each item as the single call would. ClaimBatch
// sends its creates asynchronously, all at once; the rest of the work (and
// of CompleteBatch and ReleaseBatch) sends the items' requests at once on
// the connection, up to WithBatchParallel in flight (NATS pipelines them on
// its one socket). The items of one
// intent id run in their order, one after another, so an id twice in a
// batch is claimed once, by its first occurrence. A batch has no limit of
// its own: a large one keeps WithBatchParallel requests in flight until
// every item is answered. When the batch's context ends, the items not yet
// sent answer its error; those sent answer as their request ended.

// groups returns the indexes of n items grouped by the id idOf gives each,
// each group in the items' order, the groups in the order of their first
// item.
func groups(n int, idOf func(int) string) [][]int {
	at := make(map[string]int, n)
	var gs [][]int
	for i := range n {
		id := idOf(i)
		g, ok := at[id]
		if !ok {
			g = len(gs)
			at[id] = g
			gs = append(gs, nil)
		}
		gs[g] = append(gs[g], i)
	}
	return gs
}

// acks waits for the answers to writes sent together, before any was
// awaited: one timer of attemptWait bounds them all. Until it fires, wait
// blocks for each answer, or the context's end; after, it takes only
// answers already in.
type acks struct {
	ctx   context.Context
	timer *time.Timer
	late  bool
}

func (s *Store) newAcks(ctx context.Context) *acks {
	return &acks{ctx: ctx, timer: time.NewTimer(s.attemptWait)}
}

func (a *acks) stop() { a.timer.Stop() }

// wait returns the answer to the write of f; ok is false if it has none in
// time (the item goes on the slow path). The context's end is the answer
// err of a write whose answer had not come.
func (a *acks) wait(f jetstream.PubAckFuture) (ack *jetstream.PubAck, ok bool, err error) {
	if a.late {
		select {
		case ack = <-f.Ok():
			return ack, true, nil
		case err = <-f.Err():
			return nil, true, err
		default:
			return nil, false, nil
		}
	}
	select {
	case ack = <-f.Ok():
		return ack, true, nil
	case err = <-f.Err():
		return nil, true, err
	case <-a.ctx.Done():
		return nil, true, context.Cause(a.ctx)
	case <-a.timer.C:
		a.late = true
		return nil, false, nil
	}
}

// ClaimBatch implements effector.DedupStore. The first claim of each id
// is a create, sent asynchronously with all the others before any answer
// is awaited; a create the server takes answers Claimed. The rest go on
// as Claim would, concurrently: a create that found a record reads it, one
// with no answer within WithAttemptTimeout is sent again (with its token,
// so a first one that landed is recognized), and the later occurrences of
// an id follow its first, in order.
func (s *Store) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	gs := groups(len(reqs), func(i int) string { return reqs[i].IntentID })
	type create struct {
		token       string
		rec         record
		fut         jetstream.PubAckFuture // nil if it could not be sent
		answered    bool                   // out[first] is set
		createFirst bool                   // the slow path sends the create (again)
	}
	cs := make([]create, len(gs))
	for g, idx := range gs {
		i, r, c := idx[0], reqs[idx[0]], &cs[g]
		if err := checkClaim(r.IntentID, r.Lease); err != nil {
			out[i], c.answered = effector.ClaimOutcome{Err: err}, true
			continue
		}
		if ctx.Err() != nil {
			out[i], c.answered = effector.ClaimOutcome{Err: fmt.Errorf("natsstore: claiming intent %q: %w", trimID(r.IntentID), context.Cause(ctx))}, true
			continue
		}
		token, err := s.claimToken(r.IntentID, r.Call)
		if err != nil {
			out[i], c.answered = effector.ClaimOutcome{Err: err}, true
			continue
		}
		c.token, c.rec, c.createFirst = token, s.newClaim(r.IntentID, r.Call, r.Lease, token), true
		m := &nats.Msg{Subject: s.subject + key(r.IntentID), Data: c.rec.append(nil), Header: nats.Header{}}
		c.fut, _ = s.js.PublishMsgAsync(m, writeOpts(0, r.Lease+s.attemptMemory)...)
	}
	a := s.newAcks(ctx)
	defer a.stop()
	for g := range cs {
		c := &cs[g]
		if c.answered || c.fut == nil {
			continue
		}
		ack, ok, err := a.wait(c.fut)
		if !ok {
			continue // sent again on the slow path
		}
		i := gs[g][0]
		switch {
		case err == nil:
			s.hold(ack.Sequence, c.rec)
			out[i], c.answered = effector.ClaimOutcome{Claim: effector.Claim{State: effector.Claimed, Token: c.token, Attempts: 1}}, true
		case casFailed(err):
			c.createFirst = false // the key has a record: read it
		case transient(err):
		default:
			// The context ended, or the server refused the create: it
			// may have landed, and the next claim reuses its token.
			s.unsure(reqs[i].IntentID, reqs[i].Call, c.token, reqs[i].Lease+s.attemptMemory)
			out[i], c.answered = effector.ClaimOutcome{Err: fmt.Errorf("natsstore: claiming intent %q: %w", trimID(reqs[i].IntentID), err)}, true
		}
	}
	s.finish(ctx, gs, func(g int) bool { return cs[g].answered },
		func(ctx context.Context, g int) {
			i, c := gs[g][0], &cs[g]
			cl, err := s.claim(ctx, reqs[i].IntentID, reqs[i].Call, reqs[i].Lease, c.token, c.createFirst)
			out[i] = effector.ClaimOutcome{Claim: cl, Err: err}
		},
		func(ctx context.Context, i int) {
			c, err := s.Claim(ctx, reqs[i].IntentID, reqs[i].Call, reqs[i].Lease)
			out[i] = effector.ClaimOutcome{Claim: c, Err: err}
		})
}

// CompleteBatch implements effector.DedupStore. The first completion of
// each id by the claim this Store took, with a result that fits one
// message, is an update at the claim's revision, sent asynchronously with
// all the others before any answer is awaited. The rest go on as Complete
// would, concurrently: an update refused or not answered in time reads the
// record (finding its own if it landed), and the later occurrences of an
// id follow its first, in order.
func (s *Store) CompleteBatch(ctx context.Context, reqs []effector.Completion, errs []error) {
	gs := groups(len(reqs), func(i int) string { return reqs[i].IntentID })
	type update struct {
		fut      jetstream.PubAckFuture
		answered bool
	}
	us := make([]update, len(gs))
	for g, idx := range gs {
		r, u := reqs[idx[0]], &us[g]
		if r.TTL <= 0 || ctx.Err() != nil {
			continue // Complete answers it
		}
		h, ok := s.take(r.IntentID, r.Token)
		if !ok {
			continue
		}
		now := s.now()
		d := record{tag: tagDone, call: h.rec.call, token: h.rec.token, attempts: h.rec.attempts, deadline: now.Add(r.TTL), id: h.rec.id, result: r.Result}
		if !now.Before(h.rec.deadline) || len(r.Result) > s.inlineLimit(d.id) {
			s.hold(h.rev, h.rec) // Complete answers it, from what it holds
			continue
		}
		m := &nats.Msg{Subject: s.subject + key(r.IntentID), Data: d.append(nil), Header: nats.Header{}}
		var err error
		if u.fut, err = s.js.PublishMsgAsync(m, writeOpts(h.rev, r.TTL)...); err != nil {
			u.fut = nil
		}
	}
	a := s.newAcks(ctx)
	defer a.stop()
	for g := range us {
		u := &us[g]
		if u.fut == nil {
			continue
		}
		_, ok, err := a.wait(u.fut)
		if !ok {
			continue // Complete reads what landed
		}
		i := gs[g][0]
		switch {
		case err == nil:
			errs[i], u.answered = nil, true
		case casFailed(err), transient(err):
			// Taken over, or no answer: Complete reads what is there.
		default:
			errs[i], u.answered = fmt.Errorf("natsstore: completing intent %q: %w", trimID(reqs[i].IntentID), err), true
		}
	}
	complete := func(ctx context.Context, i int) {
		r := reqs[i]
		errs[i] = s.Complete(ctx, r.IntentID, r.Token, r.Result, r.TTL)
	}
	s.finish(ctx, gs, func(g int) bool { return us[g].answered },
		func(ctx context.Context, g int) { complete(ctx, gs[g][0]) }, complete)
}

// ReleaseBatch implements effector.DedupStore.
func (s *Store) ReleaseBatch(ctx context.Context, reqs []effector.Release, errs []error) {
	gs := groups(len(reqs), func(i int) string { return reqs[i].IntentID })
	release := func(ctx context.Context, i int) {
		errs[i] = s.Release(ctx, reqs[i].IntentID, reqs[i].Token)
	}
	s.finish(ctx, gs, func(int) bool { return false },
		func(ctx context.Context, g int) { release(ctx, gs[g][0]) }, release)
}

// finish answers, up to WithBatchParallel groups at once, the items of gs
// the batch's first pass left: the first item of each group g not
// answered(g), by first(g), then the group's later items in order, by
// later(i).
func (s *Store) finish(ctx context.Context, gs [][]int, answered func(g int) bool, first func(ctx context.Context, g int), later func(ctx context.Context, i int)) {
	var rest []int
	for g, idx := range gs {
		if !answered(g) || len(idx) > 1 {
			rest = append(rest, g)
		}
	}
	s.each(ctx, len(rest), func(ctx context.Context, n int) error {
		g := rest[n]
		if !answered(g) {
			first(ctx, g)
		}
		for _, i := range gs[g][1:] {
			later(ctx, i)
		}
		return nil
	})
}
