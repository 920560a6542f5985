package effector

import (
	"context"
	"sync"
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
// cancels it: one timer for all executions instead of one per execution.
//
// Its cancelation is a context.WithCancelCause of the caller's context, made
// when the function first asks for Done (directly, or by deriving a context
// or handing ctx to something that selects on it) or when the timeout
// cancels it, so a function that never waits on ctx costs no allocation for
// it. Until then Err and Value answer from the caller's context and this
// one's state, as the made one would. Contexts derived from it are canceled
// with it; their Err is context.Canceled where context.WithTimeout's children
// would say DeadlineExceeded, and context.Cause gives the *TimeoutError
// either way.
type execContext struct {
	parent    context.Context // the caller's
	deadline  time.Time       // the earlier of the timeout and the caller's deadline
	expired   atomic.Bool     // the timeout canceled it
	in        *toolreg.Intent // whose identity IntentFrom gives
	reclaimed bool            // IntentInfo.Reclaimed

	mu          sync.Mutex
	inner       context.Context // made by live; nil until then
	innerCancel context.CancelCauseFunc
	canceled    bool // cancel was called
}

// init sets c up and returns when the tool's timeout passes, on the
// effector's monotonic clock (monoNow).
func (c *execContext) init(ctx context.Context, in *toolreg.Intent, timeout time.Duration) (timeoutAt int64) {
	c.parent = ctx
	timeoutAt = monoNow() + int64(timeout)
	c.deadline = monoTime(timeoutAt)
	if d, ok := ctx.Deadline(); ok && d.Before(c.deadline) {
		c.deadline = d
	}
	c.in = in
	return timeoutAt
}

// live returns c's cancelable context, making it on first use. c.mu is held.
func (c *execContext) live() context.Context {
	if c.inner == nil {
		c.inner, c.innerCancel = context.WithCancelCause(c.parent)
		if c.canceled {
			c.innerCancel(nil)
		}
	}
	return c.inner
}

// cancel cancels c with cause (nil: context.Canceled); only the first call
// counts.
func (c *execContext) cancel(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.canceled {
		return
	}
	if cause != nil {
		c.live() // for context.Cause to find the cause
	}
	c.canceled = true
	if c.inner != nil {
		c.innerCancel(cause)
	}
}

func (c *execContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *execContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live().Done()
}

func (c *execContext) Err() error {
	c.mu.Lock()
	var err error
	switch {
	case c.inner != nil:
		err = c.inner.Err()
	case c.parent.Err() != nil:
		err = c.parent.Err()
	case c.canceled:
		err = context.Canceled
	}
	c.mu.Unlock()
	if err != nil && c.expired.Load() {
		return context.DeadlineExceeded
	}
	return err
}

func (c *execContext) Value(key any) any {
	if key == (intentKey{}) {
		return c
	}
	c.mu.Lock()
	inner := c.inner
	c.mu.Unlock()
	if inner != nil {
		return inner.Value(key)
	}
	return c.parent.Value(key)
}

// monoOrigin is where the effector's monotonic clock starts.
var monoOrigin = time.Now()

// monoNow reads the effector's monotonic clock, in nanoseconds since
// monoOrigin: the timeouts need no wall time, and time.Since reads only the
// monotonic clock, at half the cost of time.Now.
func monoNow() int64 { return int64(time.Since(monoOrigin)) }

// monoTime is the time.Time of the monotonic reading t.
func monoTime(t int64) time.Time { return monoOrigin.Add(time.Duration(t)) }

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
