package effector

import (
	"context"
	"errors"
	"time"
)

// ClaimState is the outcome of DedupStore.Claim.
type ClaimState int

const (
	// Claimed: the caller now owns the intent until the lease ends and must
	// Complete or Release it with the claim's token.
	Claimed ClaimState = iota + 1
	// InFlight: another owner holds an unexpired lease. Wait and claim again;
	// never skip the intent.
	InFlight
	// Done: the intent has a terminal result, returned byte-identical.
	Done
)

func (s ClaimState) String() string {
	switch s {
	case Claimed:
		return "claimed"
	case InFlight:
		return "in-flight"
	case Done:
		return "done"
	}
	return "unknown"
}

// Claim is what DedupStore.Claim found.
type Claim struct {
	State ClaimState
	// Token identifies this owner's lease when State is Claimed. Complete and
	// Release take it, so a worker whose lease ran out cannot touch the record of
	// the next owner.
	Token string
	// Result holds the stored result's bytes, exactly as completed, when State is Done.
	Result []byte
	// Reclaimed is set with State Claimed when the intent's previous claim
	// ran out without Complete or Release: an earlier owner crashed or stalled
	// after claiming, and may have run the tool, so its effect is unknown.
	// A claim after a Release, or of an intent whose result expired, is not
	// reclaimed: nothing of an earlier owner is unaccounted for. The
	// conformance suite holds every store to this.
	Reclaimed bool
}

// ErrNotOwner is returned by Complete and Release when the token no longer owns
// the intent: its lease ended and another worker claimed it, or it was completed.
var ErrNotOwner = errors.New("effector: claim token does not own this intent (its lease ended)")

// DedupStore records which intents are being executed and which are done, so
// that each intent id is executed at most once across retries, restarts and
// workers. Every implementation passes the suite in package effector/storetest.
type DedupStore interface {
	// Claim takes intentID for lease if no one holds it and it is not done.
	Claim(ctx context.Context, intentID string, lease time.Duration) (Claim, error)
	// Complete stores result as intentID's terminal record, kept for ttl, if
	// token still owns the claim; otherwise it returns ErrNotOwner and changes nothing.
	// It must not keep result after it returns: the effector reuses the buffer.
	Complete(ctx context.Context, intentID, token string, result []byte, ttl time.Duration) error
	// Release gives up token's claim so another worker may claim at once; it
	// returns ErrNotOwner if token no longer owns it.
	Release(ctx context.Context, intentID, token string) error
}
