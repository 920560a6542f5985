package effector

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/intent"
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
	// Principal is who staged the call, as the intent records it (its
	// signature covers it); nil when it records none. The effector has
	// checked that it holds the tool's scopes.
	Principal *toolreg.Principal
}

type intentKey struct{}

// execContext is the context a tool function runs with. It carries the
// intent's identity for IntentFrom and reports the tool's timeout as its
// deadline, as context.WithTimeout's would, but the effector's watchdog timer
// cancels it: one timer for all executions instead of one per execution.
//
// The caller's context gives it its values, never its cancelation nor its
// deadline: a caller that gives up (an MCP request cancelled, a shutdown)
// must not stop a function that may be applying its effect; only the tool's
// timeout ends it early (see Effector.Process).
//
// Its cancelation is a context.WithCancelCause of context.WithoutCancel of the
// caller's context, made when the function first asks for Done (directly, or by deriving a context
// or handing ctx to something that selects on it) or when the timeout
// cancels it, so a function that never waits on ctx costs no allocation for
// it. Until then Err and Value answer from the caller's context and this
// one's state, as the made one would. Contexts derived from it are canceled
// with it; their Err is context.Canceled where context.WithTimeout's children
// would say DeadlineExceeded, and context.Cause gives the *TimeoutError
// either way.
type execContext struct {
	parent    context.Context // the caller's: only its values are used
	in        *intent.Intent  // whose identity IntentFrom gives
	timeoutAt int64           // the monoNow reading at which the tool's timeout passes
	flags     atomic.Uint32   // ctxMade, ctxCanceled, ctxExpired
	reclaimed bool            // IntentInfo.Reclaimed

	mu          sync.Mutex      // held to make inner and to cancel
	inner       context.Context // made by live; set before ctxMade, then fixed
	innerCancel context.CancelCauseFunc
}

const (
	ctxMade     uint32 = 1 << iota // inner exists
	ctxCanceled                    // cancel was called
	ctxExpired                     // the timeout canceled it; set before canceling
)

// init sets c up for in, under the caller's ctx, to time out after timeout.
func (c *execContext) init(ctx context.Context, in *intent.Intent, timeout time.Duration) {
	c.parent = ctx
	c.in = in
	c.timeoutAt = monoNow() + int64(timeout)
}

// live returns c's cancelable context, making it on first use. c.mu is held.
func (c *execContext) live() context.Context {
	if c.inner == nil {
		c.inner, c.innerCancel = context.WithCancelCause(context.WithoutCancel(c.parent))
		if c.flags.Or(ctxMade)&ctxCanceled != 0 {
			c.innerCancel(nil)
		}
	}
	return c.inner
}

// cancel cancels c with cause (nil: context.Canceled); only the first call
// counts.
func (c *execContext) cancel(cause error) {
	if cause == nil && c.flags.CompareAndSwap(0, ctxCanceled) {
		return // nothing was made to tell: Done and Err find it canceled when asked
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flags.Load()&ctxCanceled != 0 {
		return
	}
	if cause != nil {
		c.live() // for context.Cause to find the cause
	}
	c.flags.Or(ctxCanceled)
	if c.inner != nil {
		c.innerCancel(cause)
	}
}

// Deadline is the tool's timeout: the caller's deadline does not bound the
// function.
func (c *execContext) Deadline() (time.Time, bool) {
	return monoTime(c.timeoutAt), true
}

func (c *execContext) Done() <-chan struct{} {
	if c.flags.Load()&ctxMade != 0 {
		return c.inner.Done() // fixed once made: a select loop takes no lock
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live().Done()
}

func (c *execContext) Err() error {
	var err error
	if f := c.flags.Load(); f&ctxMade != 0 {
		err = c.inner.Err()
	} else if f&ctxCanceled != 0 {
		err = context.Canceled
	}
	if err != nil && c.flags.Load()&ctxExpired != 0 {
		return context.DeadlineExceeded
	}
	return err
}

func (c *execContext) Value(key any) any {
	if key == (intentKey{}) {
		return c
	}
	if c.flags.Load()&ctxMade != 0 {
		return c.inner.Value(key)
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
// "intent" cannot change it. A tool whose effect is a write to the store's
// own Postgres database gets the transaction that records its result from
// pgstore.TxFrom on the same context.
func IntentFrom(ctx context.Context) (IntentInfo, bool) {
	c, ok := ctx.Value(intentKey{}).(*execContext)
	if !ok {
		return IntentInfo{}, false
	}
	// EntityKey is copied, so the function cannot change the intent.
	in := c.in
	info := IntentInfo{ID: in.ID, EntityKey: append([]byte(nil), in.EntityKey...), Seq: in.Seq, Step: in.StepIndex, Attempt: in.Attempt, Reclaimed: c.reclaimed}
	if p := in.Principal; p != nil {
		info.Principal = &toolreg.Principal{Subject: p.Subject, Scopes: slices.Clone(p.Scopes)}
	}
	return info, true
}
