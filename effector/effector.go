package effector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/registry"
)

// Effector executes intents once: the only holder of side-effecting
// functions. It is safe for concurrent use; run as many Process calls at once
// as the tools allow.
type Effector struct {
	table  *registry.Registry
	store  DedupStore
	runner *ToolRunner
	cfg    config

	timeouts timeouts
}

// New returns an Effector that executes the tools of effectTable (the
// side-effecting tools with their functions: bindings.Bound.Effector) and
// records claims and results in store.
//
// It refuses, with a *ConfigError listing every problem, a configuration
// under which an intent could execute twice or never: a lease that does not
// exceed every tool's timeout (the claim could end while the function still
// runs, and another worker would run it again), a timeout for a tool the table
// does not hold, signature checking with no keys, and non-positive durations.
func New(effectTable *registry.Registry, store DedupStore, opts ...Option) (*Effector, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	var ps []string
	add := func(format string, args ...any) { ps = append(ps, fmt.Sprintf(format, args...)) }
	if effectTable == nil {
		add("the effect table is nil: pass bindings.Bound.Effector")
	}
	if store == nil {
		add("the dedup store is nil: pass NewMemoryStore() or a durable store")
	}
	if cfg.now == nil {
		add("WithClock(nil): pass a clock such as time.Now")
	}
	if cfg.logger == nil {
		add("WithLogger(nil): pass a logger, or slog.New(slog.DiscardHandler) for none")
	}
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			add("%s is %v: it must be positive", name, d)
		}
	}
	positive("WithLease", cfg.lease)
	positive("WithTimeout", cfg.timeout)
	positive("WithResultTTL", cfg.resultTTL)
	if cfg.storeTimeout < 0 {
		add("WithStoreTimeout is %v: it must be positive, or 0 for none", cfg.storeTimeout)
	}
	positive("WithBackoff minimum", cfg.minBackoff)
	if cfg.maxBackoff < cfg.minBackoff {
		add("WithBackoff maximum %v is below its minimum %v", cfg.maxBackoff, cfg.minBackoff)
	}
	if cfg.timeout > 0 && cfg.lease <= cfg.timeout {
		add("lease %v does not exceed the tool timeout %v: a claim could end while a tool still runs, and another worker would run it again; set WithLease above every timeout", cfg.lease, cfg.timeout)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.toolTimeouts)) {
		d := cfg.toolTimeouts[name]
		positive(fmt.Sprintf("WithToolTimeout(%q)", name), d)
		if effectTable != nil {
			if _, err := effectTable.Get(name); err != nil {
				add("WithToolTimeout(%q): %v", name, err)
			}
		}
		if d > 0 && cfg.lease <= d {
			add("lease %v does not exceed the timeout %v of tool %q: a claim could end while the tool still runs, and another worker would run it again; set WithLease above every timeout", cfg.lease, d, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.dropUnknown)) {
		if effectTable != nil {
			if _, err := effectTable.Get(name); err != nil {
				add("WithDropUnknownKeys(%q): %v", name, err)
			}
		}
	}
	switch cfg.mode {
	case VerifyOff:
	case VerifyPermissive, VerifyRequire:
		if len(cfg.keys) == 0 {
			add("signature mode %s with no keys: every signed intent would be refused; pass the key set to WithVerify", cfg.mode)
		}
		for _, id := range slices.Sorted(maps.Keys(cfg.keys)) {
			if len(cfg.keys[id]) == 0 {
				add("signing key %q is empty: an empty HMAC key protects nothing", id)
			}
		}
	default:
		add("unknown signature mode %d: use VerifyOff, VerifyPermissive or VerifyRequire", int(cfg.mode))
	}
	if len(ps) > 0 {
		return nil, &ConfigError{Problems: ps}
	}
	return &Effector{table: effectTable, store: store, runner: NewToolRunner(), cfg: cfg}, nil
}

// Process executes the intent at most once and returns its terminal result.
// Its phases, in order:
//
//  1. Verify the signature (see VerifyMode). An intent that fails, or has no
//     intent id, is refused: it goes to the dead-letter sink, no Result exists
//     for it, and Process returns a *RefusedError.
//  2. Refuse an intent whose expires_at_ms is not positive or not after now as
//     EXPIRED, without touching the store.
//  3. Claim its id in the store. If another worker holds it, wait (backoff
//     doubling from WithBackoff's minimum to its maximum, bounded by ctx) and
//     claim again: never skip. If it is done, return the stored result,
//     byte-identical when marshaled, without executing anything. If an
//     earlier owner's lease ran out with no result (it crashed or stalled
//     after claiming), the intent is executed again, since only a recorded
//     result proves it ran: the function sees IntentInfo.Reclaimed, and the
//     result's error_message starts "effect unknown", because the earlier
//     owner may have applied the effect. Pass IntentInfo.ID downstream as an
//     idempotency key and the effect still happens once.
//  4. Resolve and validate: an unknown tool, a read-only tool, a tool with no
//     function, malformed JSON or arguments that break the tool's contract
//     give REJECTED; the function is not invoked. An APPROVAL intent goes to
//     the approval sink instead, and is done (OK, payload
//     {"approval":"requested"}).
//  5. Execute through the ToolRunner, on the caller's goroutine, under the
//     tool's timeout. The function finds the intent's identity with
//     IntentFrom. If the timeout passes (or ctx ends) first, ERROR is
//     recorded at once, before the lease can end, even if the function
//     ignores its context; Process returns it when the function returns.
//  6. Complete the claim with the terminal result: OK with the canonical JSON
//     of what the function returned; ERROR when it returned an error,
//     panicked, timed out, was canceled, or returned something JSON cannot
//     encode (it ran: its effect is unknown, so it is never run again).
//
// Every result carries the intent's id, entity key and seq, and the clock's
// time as completed_at_ms. Results of phases 3 to 6 are stored, so a
// redelivered intent gets the same result.
//
// An error means there is no result to publish. A *RefusedError means the
// intent was dead-lettered: acknowledge it, do not redeliver it. Any other
// error (ctx ended while waiting for another worker, the store failed, the
// approval sink failed) leaves the intent to be redelivered and processed
// again; nothing ran, or the store will answer with what did.
func (e *Effector) Process(ctx context.Context, in *toolreg.Intent) (toolreg.Result, error) {
	if in == nil {
		return toolreg.Result{}, errors.New("effector: Process called with a nil intent: decode the delivery first, and dead-letter what does not decode")
	}
	if err := e.verify(in); err != nil {
		return toolreg.Result{}, e.refuse(ctx, in, err)
	}
	if now := e.cfg.now(); expired(in, now) {
		return e.expiredResult(in, now), nil
	}
	backoff := e.cfg.minBackoff
	for waited := false; ; waited = true {
		c, err := e.store.Claim(ctx, in.ID, e.cfg.lease)
		if err != nil {
			return toolreg.Result{}, fmt.Errorf("effector: claiming intent %q: %w", in.ID, err)
		}
		switch c.State {
		case Done:
			res, err := storedResult(in, c.Result)
			if err == nil && e.cfg.logger.Enabled(ctx, slog.LevelDebug) {
				e.cfg.logger.DebugContext(ctx, "effector: intent already done", "intent_id", in.ID, "status", res.Status.String())
			}
			return res, err
		case Claimed:
			return e.executeClaimed(ctx, in, c.Token, waited, c.Reclaimed)
		case InFlight:
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return toolreg.Result{}, fmt.Errorf("effector: intent %q: gave up waiting for the worker that holds it: %w", in.ID, context.Cause(ctx))
			case <-t.C:
			}
			backoff = min(2*backoff, e.cfg.maxBackoff)
		default:
			return toolreg.Result{}, fmt.Errorf("effector: claiming intent %q: the store answered with unknown state %d", in.ID, int(c.State))
		}
	}
}

// verify is phase 1.
func (e *Effector) verify(in *toolreg.Intent) error {
	if in.ID == "" {
		return fmt.Errorf("%w: it has no intent_id, so it cannot be deduplicated nor answered", ErrMalformedIntent)
	}
	if !utf8.ValidString(in.ID) {
		return fmt.Errorf("%w: its intent_id %q is not valid UTF-8", ErrMalformedIntent, in.ID)
	}
	if e.cfg.mode == VerifyOff {
		return nil
	}
	err := in.VerifyHMAC(e.cfg.keys)
	if e.cfg.mode == VerifyPermissive && errors.Is(err, toolreg.ErrUnsigned) {
		return nil
	}
	return err
}

func (e *Effector) refuse(ctx context.Context, in *toolreg.Intent, reason error) error {
	re := &RefusedError{IntentID: in.ID, Reason: reason}
	if e.cfg.deadLetter == nil {
		e.cfg.logger.WarnContext(ctx, "effector: intent refused", "intent_id", in.ID, "tool", in.ToolName, "reason", reason.Error())
		return re
	}
	re.SinkErr = e.cfg.deadLetter(ctx, in, reason)
	return re
}

func expired(in *toolreg.Intent, now time.Time) bool {
	return in.ExpiresAtMs <= 0 || in.ExpiresAtMs <= now.UnixMilli()
}

func (e *Effector) expiredResult(in *toolreg.Intent, now time.Time) toolreg.Result {
	msg := fmt.Sprintf("effector: intent %q expired at %d ms (now %d ms); nothing ran", in.ID, in.ExpiresAtMs, now.UnixMilli())
	if in.ExpiresAtMs <= 0 {
		msg = fmt.Sprintf("effector: intent %q has no expiry (expires_at_ms %d); nothing ran: stage intents with a time-to-live", in.ID, in.ExpiresAtMs)
	}
	return e.result(in, toolreg.StatusExpired, nil, msg)
}

// executeClaimed runs phases 4 to 6 for the owner of the claim token.
func (e *Effector) executeClaimed(ctx context.Context, in *toolreg.Intent, token string, waited, reclaimed bool) (toolreg.Result, error) {
	res, recorded, err := e.outcome(ctx, in, token, waited, reclaimed)
	if err != nil {
		if !recorded {
			// Nothing ran: let the next delivery try again at once.
			sctx, cancel := e.storeContext(ctx)
			defer cancel()
			if rerr := e.store.Release(sctx, in.ID, token); rerr != nil {
				e.cfg.logger.WarnContext(ctx, "effector: releasing claim", "intent_id", in.ID, "error", rerr.Error())
			}
		}
		return toolreg.Result{}, err
	}
	if !recorded {
		return e.record(ctx, in, token, res)
	}
	return res, nil
}

// storeContext is the context of a store call that records the outcome of a
// claim. It runs even if ctx has ended: a function that ran must not run
// again.
func (e *Effector) storeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	if e.cfg.storeTimeout > 0 {
		return context.WithTimeout(ctx, e.cfg.storeTimeout)
	}
	return ctx, func() {}
}

// record completes the claim with res and returns the intent's terminal
// result. That is res, unless this owner's lease ended first and another
// owner's result is stored: then it is the stored one, so that an intent
// never has two different results. If another owner holds the intent now,
// there is no result yet: the error asks for a redelivery, which the store
// will answer. If the store cannot record res at all, res is still the truth
// about this execution and is returned, but a redelivery may execute the
// intent again, so it is logged as an error.
func (e *Effector) record(ctx context.Context, in *toolreg.Intent, token string, res toolreg.Result) (toolreg.Result, error) {
	buf := wireBufs.Get().(*[]byte)
	defer putWireBuf(buf)
	b, err := res.AppendBinary((*buf)[:0])
	*buf = b
	if err == nil {
		sctx, cancel := e.storeContext(ctx)
		err = e.store.Complete(sctx, in.ID, token, b, e.cfg.resultTTL)
		cancel()
	}
	if errors.Is(err, ErrNotOwner) {
		return e.recordLate(ctx, in, b, res)
	}
	if err != nil {
		e.cfg.logger.ErrorContext(ctx, "effector: result not recorded", "intent_id", in.ID, "tool", in.ToolName, "status", res.Status.String(), "error", err.Error())
		return res, nil
	}
	if e.cfg.logger.Enabled(ctx, slog.LevelDebug) {
		e.cfg.logger.DebugContext(ctx, "effector: intent processed", "intent_id", in.ID, "tool", in.ToolName, "status", res.Status.String(), "error", res.ErrorMessage)
	}
	return res, nil
}

// wireBufs holds the buffers results are marshaled into for the store,
// which copies what it keeps (DedupStore.Complete does not retain result).
var wireBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// putWireBuf returns buf to wireBufs, unless a large result grew it: one
// outsized payload must not pin its memory in the pool.
func putWireBuf(buf *[]byte) {
	if cap(*buf) <= 64<<10 {
		wireBufs.Put(buf)
	}
}

// storedResult decodes the result the store holds for in.
func storedResult(in *toolreg.Intent, b []byte) (toolreg.Result, error) {
	var res toolreg.Result
	if err := res.UnmarshalBinary(b); err != nil {
		return toolreg.Result{}, fmt.Errorf("effector: intent %q: the store's result is not a ToolResult (%w): the store is corrupt or shared with something else; give the effector a store (or key prefix) of its own", in.ID, err)
	}
	return res, nil
}

// recordLate handles a Complete refused because this owner's lease ended
// while it ran (it stalled, or was paused): another owner may have claimed
// the intent since.
func (e *Effector) recordLate(ctx context.Context, in *toolreg.Intent, b []byte, res toolreg.Result) (toolreg.Result, error) {
	e.cfg.logger.WarnContext(ctx, "effector: the claim's lease ended before the result was recorded: raise WithLease above the tool's run time", "intent_id", in.ID, "tool", in.ToolName)
	sctx, cancel := e.storeContext(ctx)
	defer cancel()
	c, err := e.store.Claim(sctx, in.ID, e.cfg.lease)
	if err != nil {
		return toolreg.Result{}, fmt.Errorf("effector: intent %q: its lease ended before its result was recorded, and the store cannot say what is recorded now: %w", in.ID, err)
	}
	switch c.State {
	case Done:
		return storedResult(in, c.Result)
	case Claimed:
		// No one else finished it: this execution's result is the one.
		if err := e.store.Complete(sctx, in.ID, c.Token, b, e.cfg.resultTTL); err != nil {
			e.cfg.logger.ErrorContext(ctx, "effector: result not recorded", "intent_id", in.ID, "tool", in.ToolName, "status", res.Status.String(), "error", err.Error())
		}
		return res, nil
	default:
		return toolreg.Result{}, fmt.Errorf("effector: intent %q: its lease ended before its result was recorded, and another worker holds it now: redeliver it for that worker's result", in.ID)
	}
}

// outcome runs phases 4 and 5 and returns the terminal result, and whether it
// is already recorded. An error means nothing ran and nothing is terminal:
// the claim is released.
func (e *Effector) outcome(ctx context.Context, in *toolreg.Intent, token string, waited, reclaimed bool) (res toolreg.Result, recorded bool, err error) {
	// After waiting for another worker, the intent may have expired; it must
	// not run late.
	if waited {
		if now := e.cfg.now(); expired(in, now) {
			return e.expiredResult(in, now), false, nil
		}
	}
	switch in.Kind {
	case toolreg.KindTool, toolreg.KindUnspecified:
	case toolreg.KindApproval:
		res, err := e.approve(ctx, in)
		return res, false, err
	default:
		return e.rejected(in, fmt.Sprintf("effector: intent %q has kind %s, which this effector does not know: upgrade it", in.ID, in.Kind)), false, nil
	}
	t, err := e.table.Get(in.ToolName)
	switch {
	case err != nil:
		return e.rejected(in, err.Error()), false, nil
	case !t.SideEffect():
		return e.rejected(in, (&toolreg.ReadOnlyToolError{Name: t.Name()}).Error()), false, nil
	case !t.Bound():
		return e.rejected(in, fmt.Sprintf("effector: tool %q has no function in the effect table: bind it with bindings.Effect", t.Name())), false, nil
	}
	args, err := t.DecodeArgs(e.dropUnknownKeys(ctx, in, t))
	if err != nil {
		return e.rejected(in, err.Error()), false, nil
	}
	if err := ctx.Err(); err != nil {
		return toolreg.Result{}, false, fmt.Errorf("effector: intent %q not executed: %w", in.ID, context.Cause(ctx))
	}
	return e.execute(ctx, in, t, args, token, reclaimed)
}

// execute runs the tool's function through the ToolRunner under the tool's
// timeout, with args as phase 4 decoded them, and returns its terminal result.
//
// If the timeout passes or ctx ends while the function runs, a watchdog
// records ERROR at once, so the outcome is in the store before the lease
// ends even when the function ignores its context, and no other worker can
// run the intent again. The call still waits for the function to return, and
// then returns the recorded result (recorded is true). The function runs on
// the caller's goroutine, so a worker pool bounds how many run at once.
//
// reclaimed says an earlier owner's claim ran out without a result: it may
// have run the function, so this run may repeat the effect. The function sees
// it in IntentInfo.Reclaimed, and the result says the effect is unknown.
func (e *Effector) execute(ctx context.Context, in *toolreg.Intent, t *toolreg.Tool, args any, token string, reclaimed bool) (res toolreg.Result, recorded bool, err error) {
	x := e.start(ctx, in, e.timeout(t.Name()), token, reclaimed)
	v, err := e.runner.runDecoded(&x.execContext, t, args)
	if !x.stop() {
		return x.interrupted.res, true, x.interrupted.err
	}
	if err != nil {
		return x.ran(toolreg.StatusError, nil, err.Error()), false, nil
	}
	payload, err := canonicalResult(v)
	if err != nil {
		return x.ran(toolreg.StatusError, nil, fmt.Sprintf("effector: tool %q ran, but its result cannot be encoded as JSON: %v", t.Name(), err)), false, nil
	}
	return x.ran(toolreg.StatusOK, payload, ""), false, nil
}

// start sets up the execution of in under the caller's ctx: the context its
// function gets, and the watchdog that interrupts it after timeout or when
// ctx ends.
func (e *Effector) start(ctx context.Context, in *toolreg.Intent, timeout time.Duration, token string, reclaimed bool) *execution {
	x := &execution{e: e, timeout: timeout, token: token}
	x.execContext.init(ctx, in, timeout)
	x.reclaimed = reclaimed
	x.watchdog.exec = x
	x.wg.Add(1)
	e.timeouts.add(&x.watchdog, timeout)
	if ctx.Done() != nil {
		x.stopHook = context.AfterFunc(ctx, x.canceled)
	}
	return x
}

// stop ends the execution once its function has returned, and cancels its
// context. It reports whether the return decides the result; if an
// interruption won, it returns once that ERROR is recorded, in x.interrupted.
func (x *execution) stop() bool {
	defer x.cancel(nil)
	x.e.timeouts.remove(&x.watchdog)
	if x.stopHook != nil {
		x.stopHook()
	}
	if !x.state.CompareAndSwap(running, returned) {
		x.wg.Wait()
		return false
	}
	return true
}

// unknownEffect is the note on the result of a reclaimed execution.
const unknownEffect = "effect unknown: an earlier attempt claimed this intent and stopped without a result, so it may have run the tool; this attempt ran it again, which repeats the effect unless the downstream deduplicates on the intent id"

// ran is the result of an execution whose function ran (or may have).
func (x *execution) ran(st toolreg.Status, payload []byte, msg string) toolreg.Result {
	if x.reclaimed {
		if msg == "" {
			msg = unknownEffect
		} else {
			msg = unknownEffect + "; " + msg
		}
	}
	return x.e.result(x.in, st, payload, msg)
}

// execution is one run of a tool function, in one allocation: the context
// the function gets and the watchdog that may interrupt it.
type execution struct {
	execContext
	watchdog

	e        *Effector
	timeout  time.Duration
	token    string
	stopHook func() bool // stops the hook on the caller's ctx, if it can end
}

func (x *execution) timedOut() { x.interrupt(true) }
func (x *execution) canceled() { x.interrupt(false) }

// interrupt records ERROR for a function that has not returned, unless it
// returned first.
func (x *execution) interrupt(timedOut bool) {
	if !x.state.CompareAndSwap(running, interrupted) {
		return
	}
	defer x.wg.Done()
	var msg string
	if timedOut {
		te := &TimeoutError{Tool: x.in.ToolName, Timeout: x.timeout}
		x.flags.Or(ctxExpired)
		x.cancel(te) // tell the function; it may not listen
		msg = te.Error()
	} else {
		msg = fmt.Sprintf("effector: tool %q was canceled while running; its effect is unknown: %v", x.in.ToolName, context.Cause(x.parent))
	}
	res, err := x.e.record(x.parent, x.in, x.token, x.ran(toolreg.StatusError, nil, msg))
	x.interrupted = &interruption{res: res, err: err}
}

// approvalRequested is the payload of a done APPROVAL intent.
var approvalRequested = []byte(`{"approval":"requested"}`)

func (e *Effector) approve(ctx context.Context, in *toolreg.Intent) (toolreg.Result, error) {
	if e.cfg.approval == nil {
		return e.rejected(in, fmt.Sprintf("effector: intent %q asks for approval, and this effector has no approval sink: configure WithApproval", in.ID)), nil
	}
	if err := e.cfg.approval(ctx, in); err != nil {
		return toolreg.Result{}, fmt.Errorf("effector: intent %q: approval sink: %w", in.ID, err)
	}
	return e.result(in, toolreg.StatusOK, approvalRequested, ""), nil
}

func (e *Effector) rejected(in *toolreg.Intent, msg string) toolreg.Result {
	return e.result(in, toolreg.StatusRejected, nil, msg)
}

func (e *Effector) result(in *toolreg.Intent, st toolreg.Status, payload []byte, msg string) toolreg.Result {
	return toolreg.Result{
		IntentID:      in.ID,
		EntityKey:     append([]byte(nil), in.EntityKey...),
		Seq:           in.Seq,
		Status:        st,
		Payload:       payload,
		ErrorMessage:  strings.ToValidUTF8(msg, "\uFFFD"), // a proto3 string must be UTF-8
		CompletedAtMs: e.cfg.now().UnixMilli(),
	}
}

func (e *Effector) timeout(tool string) time.Duration {
	if d, ok := e.cfg.toolTimeouts[tool]; ok {
		return d
	}
	return e.cfg.timeout
}
