package effector

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/beam-agents/toolreg/canonjson"
	"github.com/beam-agents/toolreg/intent"
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
	// Mismatch: the intent id is known (done, in flight, or claimed before
	// by an owner that may have run it) for another call than the one asked
	// for: Claim.Recorded holds the recorded call. Nothing is claimed and no
	// result is returned: the stored result answers another call.
	Mismatch
)

func (s ClaimState) String() string {
	switch s {
	case Claimed:
		return "claimed"
	case InFlight:
		return "in-flight"
	case Done:
		return "done"
	case Mismatch:
		return "mismatch"
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
	// Attempts counts, with State Claimed, the claims of the intent that did
	// not end in a Release, this one included: 1 for a first claim, more
	// when earlier owners' leases ran out (they crashed or stalled mid-way).
	// A Release gives its attempt back, since nothing ran. The effector
	// refuses to run an intent again past WithMaxAttempts.
	Attempts int
	// Recorded is the call the intent id was first claimed for, with State
	// Mismatch.
	Recorded Call
}

// MaxCallToolBytes is the most bytes of a tool name a Call keeps, so a
// store's record of a call has a fixed bound whatever an intent carries.
// The digest covers the whole name.
const MaxCallToolBytes = 64

// Call is what an intent asks to run, in a fixed size a store can keep with
// the claim: the tool's name (at most MaxCallToolBytes of it, to name the
// call in messages) and a SHA-256 digest of the whole tool name and the
// canonical JSON of the arguments. Two calls are the same call when their
// digests are equal.
type Call struct {
	Tool   string
	Digest [sha256.Size]byte
}

// NewCall returns the call of tool with the JSON arguments args. Arguments
// that differ only in spacing or member order are the same call; arguments
// that are not JSON are digested as given (the effector rejects them).
func NewCall(tool string, args []byte) Call {
	buf := callBufs.Get().(*[]byte)
	defer callBufs.Put(buf)
	b := binary.BigEndian.AppendUint64((*buf)[:0], uint64(len(tool)))
	b = append(b, tool...)
	if out, err := canonjson.AppendCanonical(b, args); err == nil {
		b = out
	} else {
		b = append(b, args...)
	}
	*buf = b
	return Call{Tool: cutTool(tool), Digest: sha256.Sum256(b)}
}

// CallOf returns the call in asks for: NewCall(in.ToolName, in.ArgsJSON).
func CallOf(in *intent.Intent) Call { return NewCall(in.ToolName, in.ArgsJSON) }

var callBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// cutTool keeps at most MaxCallToolBytes of name, cut at a rune boundary.
func cutTool(name string) string {
	if len(name) <= MaxCallToolBytes {
		return name
	}
	n := MaxCallToolBytes
	for n > 0 && !utf8.RuneStart(name[n]) {
		n--
	}
	return name[:n]
}

// String names the call for people: the tool and the first bytes of the
// digest, such as `tool "send_email" with arguments sha256:1f2e3d4c5b6a`.
func (c Call) String() string {
	return fmt.Sprintf("tool %q with arguments sha256:%s", c.Tool, hex.EncodeToString(c.Digest[:6]))
}

// ErrNotOwner is returned by Complete and Release when the token no longer owns
// the intent: its lease ended and another worker claimed it, or it was completed.
var ErrNotOwner = errors.New("effector: claim token does not own this intent (its lease ended)")

// DedupStore records which intents are being executed and which are done, so
// that each intent id is executed at most once across retries, restarts and
// workers. Every implementation passes the suite in package effector/storetest.
//
// The batch forms (ClaimBatch, CompleteBatch, ReleaseBatch) take many
// intents in one call, each answered on its own, and return once every
// item is answered. A store takes a batch larger than its own limit on one
// statement, pipeline or transaction (its package says what that is) in
// parts, one after another, instead of failing it: a batch holds its items
// as long as its parts take, and a later part's leases start later. When
// the batch's context ends, the items not yet sent answer its error and
// are not written; those sent answer as their store call ended.
type DedupStore interface {
	// Claim takes intentID for lease, recording call with it, if no one
	// holds it and it is not done. If intentID is known (done, in flight, or
	// claimed by an owner whose lease ran out) for a call whose digest
	// differs from call's, it returns Mismatch with the recorded call, and
	// neither claims nor returns the result.
	Claim(ctx context.Context, intentID string, call Call, lease time.Duration) (Claim, error)
	// Complete stores result as intentID's terminal record, kept for ttl, if
	// token still owns the claim; otherwise it returns ErrNotOwner and changes nothing.
	// It must not keep result after it returns: the effector reuses the buffer.
	Complete(ctx context.Context, intentID, token string, result []byte, ttl time.Duration) error
	// Release gives up token's claim so another worker may claim at once; it
	// returns ErrNotOwner if token no longer owns it.
	Release(ctx context.Context, intentID, token string) error

	// ClaimBatch claims each of reqs as Claim would, in one round trip to
	// the store where it can, and answers reqs[i] in out[i] (len(out) must
	// be len(reqs)). Each item answers for itself: one item's error (a
	// lease of 0, a row the store refuses) is out[i].Err alone and never
	// fails another item. An intent id that appears more than once in reqs
	// is claimed once, by its first occurrence; a later one finds what the
	// one before it left (InFlight for the same call, Mismatch for
	// another), as a second caller would.
	//
	// An item answered Claimed holds a durable claim; one answered with an
	// error may or may not have been claimed, as with Claim's errors (such
	// a claim runs out by its lease). Each claim's lease starts when the
	// store takes it, no earlier than the call and no later than its
	// return: count it from the call, so that the time the batch takes and
	// the time a claimed item then waits for a worker are taken from the
	// lease, never added to it.
	ClaimBatch(ctx context.Context, reqs []ClaimRequest, out []ClaimOutcome)
	// CompleteBatch completes each of reqs as Complete would, in one round
	// trip where it can, and sets errs[i] (len(errs) must be len(reqs)) to
	// reqs[i]'s error alone: nil once that completion is durable,
	// ErrNotOwner where its token no longer owns the claim (its lease ended
	// before the store reached it, or an earlier item of the batch
	// completed it), another error where the store may or may not have
	// stored it. It must not keep any Result after it returns.
	CompleteBatch(ctx context.Context, reqs []Completion, errs []error)
	// ReleaseBatch releases each of reqs as Release would and sets errs[i]
	// to reqs[i]'s error alone.
	ReleaseBatch(ctx context.Context, reqs []Release, errs []error)
}

// ClaimRequest is one item of DedupStore.ClaimBatch: the arguments of one
// Claim.
type ClaimRequest struct {
	IntentID string
	Call     Call
	Lease    time.Duration
}

// ClaimOutcome answers one ClaimRequest: what Claim would have returned.
type ClaimOutcome struct {
	Claim Claim
	Err   error
}

// Completion is one item of DedupStore.CompleteBatch: the arguments of one
// Complete.
type Completion struct {
	IntentID string
	Token    string
	Result   []byte
	TTL      time.Duration
}

// Release is one item of DedupStore.ReleaseBatch: the arguments of one
// Release.
type Release struct {
	IntentID string
	Token    string
}

// InFlightWaiter is implemented by a DedupStore that can wake a worker
// waiting on an intent another owner holds as soon as that owner completes
// or releases it (effector/pgstore, through LISTEN/NOTIFY). When a claim
// finds the intent InFlight, the effector calls WaitInFlight with its
// current backoff as max, instead of sleeping the backoff, and claims again
// when it returns; so the backoff stays the polling fallback. WaitInFlight
// must return by max, or when ctx ends, and may return early at any time.
type InFlightWaiter interface {
	WaitInFlight(ctx context.Context, intentID string, max time.Duration)
}
