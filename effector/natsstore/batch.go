package natsstore

import (
	"context"

	"github.com/beam-agents/toolreg/effector"
)

// The batch forms send their items' requests at once on the connection,
// up to WithBatchParallel in flight (NATS pipelines them on its one
// socket), and answer each item as the single call would. The items of one
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

// ClaimBatch implements effector.DedupStore.
func (s *Store) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	gs := groups(len(reqs), func(i int) string { return reqs[i].IntentID })
	s.each(ctx, len(gs), func(ctx context.Context, g int) error {
		for _, i := range gs[g] {
			c, err := s.Claim(ctx, reqs[i].IntentID, reqs[i].Call, reqs[i].Lease)
			out[i] = effector.ClaimOutcome{Claim: c, Err: err}
		}
		return nil
	})
}

// CompleteBatch implements effector.DedupStore.
func (s *Store) CompleteBatch(ctx context.Context, reqs []effector.Completion, errs []error) {
	gs := groups(len(reqs), func(i int) string { return reqs[i].IntentID })
	s.each(ctx, len(gs), func(ctx context.Context, g int) error {
		for _, i := range gs[g] {
			r := reqs[i]
			errs[i] = s.Complete(ctx, r.IntentID, r.Token, r.Result, r.TTL)
		}
		return nil
	})
}

// ReleaseBatch implements effector.DedupStore.
func (s *Store) ReleaseBatch(ctx context.Context, reqs []effector.Release, errs []error) {
	gs := groups(len(reqs), func(i int) string { return reqs[i].IntentID })
	s.each(ctx, len(gs), func(ctx context.Context, g int) error {
		for _, i := range gs[g] {
			errs[i] = s.Release(ctx, reqs[i].IntentID, reqs[i].Token)
		}
		return nil
	})
}
