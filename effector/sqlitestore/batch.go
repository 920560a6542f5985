package sqlitestore

import (
	"context"
	"fmt"

	"github.com/beam-agents/toolreg/effector"
)

// The batch forms. Each item is one op of the store's group commit
// (group.go), queued together with the batch's other items through
// groupcommit's DoAll: so a batch, and whatever other calls are queued with
// it, commits in one transaction, one fsync, item by item in the batch's
// order (an id twice in a batch is claimed by its first occurrence, and the
// second finds that claim, as a second caller would). Each item is its own
// prepared statement (a release, two in a savepoint), so SQLite's limit on
// a statement's variables never applies; the store's own limit is WithBatch's
// size: a transaction holds at most that many ops, and a larger batch, or
// one queued behind other calls, is split over transactions that commit one
// after another. An item fails alone (its statement undoes itself); an item
// still queued when the batch's context ends is not written and answers the
// context's error; every other item answers only once its transaction has
// committed.

// ClaimBatch implements effector.DedupStore.
func (s *Store) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	items := make([]claimItem, len(reqs))
	ops := make([]writeOp, 0, len(reqs))
	idx := make([]int, 0, len(reqs))
	for i, r := range reqs {
		if r.Lease <= 0 {
			out[i] = effector.ClaimOutcome{Err: fmt.Errorf("sqlitestore: claiming intent %q for a lease of %v: want a positive duration", r.IntentID, r.Lease)}
			continue
		}
		token, err := s.newToken()
		if err != nil {
			out[i] = effector.ClaimOutcome{Err: err}
			continue
		}
		items[i] = claimItem{id: r.IntentID, call: r.Call, lease: r.Lease, token: token}
		ops = append(ops, writeOp{fn: items[i].run(s)})
		idx = append(idx, i)
	}
	for k, o := range s.group.DoAll(ctx, ops) {
		i := idx[k]
		err := o.Err
		if err == nil && items[i].recorded {
			items[i].claim, err = s.mismatch(ctx, items[i].id)
		}
		if err != nil {
			out[i] = effector.ClaimOutcome{Err: fmt.Errorf("sqlitestore: claiming intent %q: %w", items[i].id, err)}
			continue
		}
		out[i] = effector.ClaimOutcome{Claim: items[i].claim}
	}
}

// CompleteBatch implements effector.DedupStore.
func (s *Store) CompleteBatch(ctx context.Context, reqs []effector.Completion, errs []error) {
	ops := make([]writeOp, 0, len(reqs))
	idx := make([]int, 0, len(reqs))
	for i, r := range reqs {
		if r.TTL <= 0 {
			errs[i] = fmt.Errorf("sqlitestore: completing intent %q with a result ttl of %v: want a positive duration", r.IntentID, r.TTL)
			continue
		}
		result := r.Result
		if result == nil {
			result = []byte{} // stored as an empty BLOB, not NULL: a result was given
		}
		ops = append(ops, writeOp{fn: s.completeOp(r.IntentID, r.Token, result, r.TTL)})
		idx = append(idx, i)
	}
	for k, o := range s.group.DoAll(ctx, ops) {
		i := idx[k]
		errs[i] = nil
		if o.Err != nil {
			errs[i] = fmt.Errorf("sqlitestore: completing intent %q: %w", reqs[i].IntentID, o.Err)
		}
	}
}

// ReleaseBatch implements effector.DedupStore.
func (s *Store) ReleaseBatch(ctx context.Context, reqs []effector.Release, errs []error) {
	ops := make([]writeOp, len(reqs))
	for i, r := range reqs {
		ops[i] = writeOp{fn: s.releaseOp(r.IntentID, r.Token), multi: true}
	}
	for i, o := range s.group.DoAll(ctx, ops) {
		errs[i] = nil
		if o.Err != nil {
			errs[i] = fmt.Errorf("sqlitestore: releasing intent %q: %w", reqs[i].IntentID, o.Err)
		}
	}
}
