package redisstore

import (
	"context"
	"sync"

	"github.com/beam-agents/toolreg/effector"
)

// Interim batch forms: each item through the single-intent call,
// concurrently, so the store's group commit shares their round trips.
// To be replaced by a native batch (issue 32).

// ClaimBatch implements effector.DedupStore.
func (s *Store) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := s.Claim(ctx, reqs[i].IntentID, reqs[i].Call, reqs[i].Lease)
			out[i] = effector.ClaimOutcome{Claim: c, Err: err}
		}()
	}
	wg.Wait()
}

// CompleteBatch implements effector.DedupStore.
func (s *Store) CompleteBatch(ctx context.Context, reqs []effector.Completion, errs []error) {
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Complete(ctx, reqs[i].IntentID, reqs[i].Token, reqs[i].Result, reqs[i].TTL)
		}()
	}
	wg.Wait()
}

// ReleaseBatch implements effector.DedupStore.
func (s *Store) ReleaseBatch(ctx context.Context, reqs []effector.Release, errs []error) {
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Release(ctx, reqs[i].IntentID, reqs[i].Token)
		}()
	}
	wg.Wait()
}
