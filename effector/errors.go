package effector

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/beam-agents/toolreg/intent"
)

// ErrMalformedIntent is the reason an intent with no usable intent_id is
// refused.
var ErrMalformedIntent = errors.New("effector: malformed intent")

// RefusedError reports an intent refused before it reached the store: its
// signature did not verify (Reason wraps intent.ErrUnsigned,
// intent.ErrUnknownKey or intent.ErrBadSignature, in a
// *intent.SignatureError) or it is malformed (ErrMalformedIntent). It was
// handed to the dead-letter sink; no Result exists for it and nothing ran.
type RefusedError struct {
	IntentID string
	Reason   error
	// SinkErr is the dead-letter sink's error, if it failed to take the
	// intent: the caller should then keep the intent rather than drop it.
	SinkErr error
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("effector: intent %q refused: %v", e.IntentID, e.Reason)
	if e.SinkErr != nil {
		msg += fmt.Sprintf(" (and the dead-letter sink failed: %v)", e.SinkErr)
	}
	return msg
}

// Unwrap returns the reason and the sink's error, so errors.Is(err,
// intent.ErrBadSignature) and errors.As(err, **intent.SignatureError) work.
func (e *RefusedError) Unwrap() []error {
	if e.SinkErr != nil {
		return []error{e.Reason, e.SinkErr}
	}
	return []error{e.Reason}
}

// TimeoutError is the error of a tool that did not return within its timeout.
// The intent's result is ERROR: the function may have had its effect.
type TimeoutError struct {
	Tool    string
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("effector: tool %q did not return within its timeout of %v; its effect is unknown: make it return when its context ends, or raise its timeout with WithToolTimeout", e.Tool, e.Timeout)
}

// ConfigError reports every problem of an Effector's configuration.
type ConfigError struct {
	Problems []string
}

func (e *ConfigError) Error() string {
	if len(e.Problems) == 1 {
		return "effector: " + e.Problems[0]
	}
	return fmt.Sprintf("effector: %d configuration problems:\n\t%s", len(e.Problems), strings.Join(e.Problems, "\n\t"))
}

// DetachedError is what Process returns when its caller's context ends while
// the intent's tool function runs. The function is not interrupted: only its
// tool timeout may end it early. It runs on, detached from the caller, and
// its real outcome is recorded in the store when it returns; processing the
// intent again (a redelivery) waits for it and returns that result. If the
// process exits first, the claim lapses and the next owner runs the intent
// as Reclaimed (effect unknown). errors.Is(err, context.Canceled) (or
// DeadlineExceeded) holds, per the caller's context.
type DetachedError struct {
	IntentID string
	Tool     string
	Cause    error // the caller's context's cause
}

func (e *DetachedError) Error() string {
	return fmt.Sprintf("effector: intent %q: the caller's context ended (%v) while tool %q runs; it runs on, and its result will be recorded: process it again (redeliver it) for that result", e.IntentID, e.Cause, e.Tool)
}

func (e *DetachedError) Unwrap() error { return e.Cause }

// UnrecordedError is what Process returns when a tool ran but the store
// could not record its result, though Complete was retried until the
// claim's lease ended. The intent must not be acknowledged: its claim lapses,
// and the next owner runs it as Reclaimed (effect unknown). Result is what
// this execution gave, for logs only: nothing holds it.
type UnrecordedError struct {
	IntentID string
	Tool     string
	Result   intent.Result
	Attempts int
	Err      error // the store's last error
}

func (e *UnrecordedError) Error() string {
	return fmt.Sprintf("effector: intent %q: tool %q ran (%s), but the store could not record its result in %d attempts until the lease's end: %v; the intent is left unacknowledged, and its next owner runs it as reclaimed (effect unknown): fix the store (disk space, connectivity)", e.IntentID, e.Tool, e.Result.Status, e.Attempts, e.Err)
}

func (e *UnrecordedError) Unwrap() error { return e.Err }

// IntentIDError is the reason an intent whose id is not
// intent.IntentID(EntityKey, Seq, StepIndex) is refused, signed or not: its
// id is how the effector runs each step once, so an id that does not follow
// from the step (a producer bug, an edit) could run one step twice under two
// ids. errors.Is(err, ErrMalformedIntent) holds.
type IntentIDError struct {
	ID        string // the intent's id
	Want      string // the id its entity key, seq and step give
	EntityKey []byte
	Seq       int64
	Step      uint32
}

func (e *IntentIDError) Error() string {
	return fmt.Sprintf("effector: intent %q: its id is not the one its position gives, intent.IntentID(entity key %q, seq %d, step %d) = %q; nothing ran: stage intents with runner.Activation.Act, which derives the id, or fix the producer", e.ID, e.EntityKey, e.Seq, e.Step, e.Want)
}

func (e *IntentIDError) Is(target error) bool { return target == ErrMalformedIntent }
