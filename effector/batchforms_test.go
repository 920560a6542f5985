package effector_test

import (
	"context"
	"time"

	"github.com/beam-agents/toolreg/effector"
)

// The test stores below override single-intent calls (Claim, Complete,
// Release) to fail, count or pause them. Serve claims and completes in
// batches, so each also answers the batch form through its override, item
// by item: a store that cannot complete cannot complete in a batch either.

type claimFunc func(ctx context.Context, id string, call effector.Call, lease time.Duration) (effector.Claim, error)

func claimEach(ctx context.Context, claim claimFunc, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	for i, r := range reqs {
		out[i].Claim, out[i].Err = claim(ctx, r.IntentID, r.Call, r.Lease)
	}
}

func completeEach(ctx context.Context, complete func(ctx context.Context, id, token string, res []byte, ttl time.Duration) error, reqs []effector.Completion, errs []error) {
	for i, r := range reqs {
		errs[i] = complete(ctx, r.IntentID, r.Token, r.Result, r.TTL)
	}
}

func releaseEach(ctx context.Context, release func(ctx context.Context, id, token string) error, reqs []effector.Release, errs []error) {
	for i, r := range reqs {
		errs[i] = release(ctx, r.IntentID, r.Token)
	}
}

func (s cancelOnClaim) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	claimEach(ctx, s.Claim, reqs, out)
}

func (s pausingStore) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	claimEach(ctx, s.Claim, reqs, out)
}

func (s *countingStore) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	claimEach(ctx, s.Claim, reqs, out)
}

func (s *countingStore) CompleteBatch(ctx context.Context, reqs []effector.Completion, errs []error) {
	completeEach(ctx, s.Complete, reqs, errs)
}

func (s *countingStore) ReleaseBatch(ctx context.Context, reqs []effector.Release, errs []error) {
	releaseEach(ctx, s.Release, reqs, errs)
}

func (s failingStore) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	claimEach(ctx, s.Claim, reqs, out)
}

func (s *hookStore) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	claimEach(ctx, s.Claim, reqs, out)
}

func (s downStore) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	claimEach(ctx, s.Claim, reqs, out)
}

func (s *completeFailing) CompleteBatch(ctx context.Context, reqs []effector.Completion, errs []error) {
	completeEach(ctx, s.Complete, reqs, errs)
}
