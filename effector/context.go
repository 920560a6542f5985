package effector

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/beam-agents/toolreg"
)

// IntentInfo is the identity of the intent a tool function is executing for.
// Pass ID downstream as an idempotency key (a payment provider's
// Idempotency-Key header, a unique column), so that even an execution whose
// outcome was lost cannot repeat the effect.
type IntentInfo struct {
	ID        string // the intent id: a pure function of (EntityKey, Seq, Step)
	EntityKey []byte
	Seq       int64
	Step      uint32
	Attempt   uint32
	// Reclaimed says an earlier attempt claimed this intent and stopped
	// without a result: it may have applied the effect. A function whose
	// downstream cannot deduplicate on ID should check there before acting.
	Reclaimed bool
}

type intentKey struct{}

// execContext is the context a tool function runs with. It carries the
// intent's identity for IntentFrom and reports the tool's timeout as its
// deadline, as context.WithTimeout's would, but the effector's watchdog timer
// cancels it: one timer per execution instead of two. Contexts derived from
// it are canceled with it; their Err is context.Canceled where
// context.WithTimeout's children would say DeadlineExceeded, and
// context.Cause gives the *TimeoutError either way.
type execContext struct {
	context.Context // context.WithCancelCause of the caller's
	cancel          context.CancelCauseFunc
	deadline        time.Time // the earlier of the timeout and ctx's deadline
	expired         atomic.Bool
	in              *toolreg.Intent // whose identity IntentFrom gives
	reclaimed       bool            // IntentInfo.Reclaimed
}

// init sets c up and returns when the tool's timeout passes.
func (c *execContext) init(ctx context.Context, in *toolreg.Intent, timeout time.Duration) (timeoutAt time.Time) {
	c.Context, c.cancel = context.WithCancelCause(ctx)
	timeoutAt = time.Now().Add(timeout)
	c.deadline = timeoutAt
	if d, ok := ctx.Deadline(); ok && d.Before(c.deadline) {
		c.deadline = d
	}
	c.in = in
	return timeoutAt
}

func (c *execContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *execContext) Err() error {
	err := c.Context.Err()
	if err != nil && c.expired.Load() {
		return context.DeadlineExceeded
	}
	return err
}

func (c *execContext) Value(key any) any {
	if key == (intentKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// IntentFrom returns the identity of the intent being executed, when ctx is
// (derived from) the context the effector passes to a tool function. It comes
// from the intent itself, never from the arguments: an argument called
// "intent" cannot change it.
func IntentFrom(ctx context.Context) (IntentInfo, bool) {
	c, ok := ctx.Value(intentKey{}).(*execContext)
	if !ok {
		return IntentInfo{}, false
	}
	// EntityKey is copied, so the function cannot change the intent.
	in := c.in
	return IntentInfo{ID: in.ID, EntityKey: append([]byte(nil), in.EntityKey...), Seq: in.Seq, Step: in.StepIndex, Attempt: in.Attempt, Reclaimed: c.reclaimed}, true
}
