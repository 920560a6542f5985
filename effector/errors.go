package effector

import (
	"errors"
	"fmt"
	"strings"
	"time"
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
