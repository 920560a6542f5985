package effector

import (
	"bytes"
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
	"github.com/beam-agents/toolreg/canonjson"
	"github.com/beam-agents/toolreg/intent"
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
	stats    stats
	tel      telemetry    // telemetry.go
	pubs     publications // approval.go: ResumeDecided's unfinished publications
}

// New returns an Effector that executes the tools of effectTable (the
// side-effecting tools with their functions: bindings.Bound.Effector) and
// records claims and results in store.
//
// It refuses, with a *ConfigError listing every problem, a configuration
// under which an intent could execute twice or never: a lease that does not
// exceed every tool's timeout plus the store timeout plus LeaseMargin (the
// claim could end before a timed-out function's result is recorded, and
// another worker would run it again), a timeout for a tool the table
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
	if cfg.maxAttempts < 1 {
		add("WithMaxAttempts(%d): want at least 1 attempt", cfg.maxAttempts)
	}
	positive("WithBackoff minimum", cfg.minBackoff)
	if cfg.maxBackoff < cfg.minBackoff {
		add("WithBackoff maximum %v is below its minimum %v", cfg.maxBackoff, cfg.minBackoff)
	}
	// After a tool's timeout the watchdog records ERROR with a store call
	// bounded by the store timeout; all of it must end before the lease does.
	leaseCovers := func(timeout time.Duration) (time.Duration, bool) {
		need := timeout + max(cfg.storeTimeout, 0) + LeaseMargin
		return need, cfg.lease > need
	}
	if need, ok := leaseCovers(cfg.timeout); cfg.timeout > 0 && !ok {
		add("lease %v does not exceed the tool timeout %v plus the store timeout %v plus the margin %v (%v): a claim could end before a timed-out tool's result is recorded, and another worker would run it again; set WithLease above %v, or lower the timeouts", cfg.lease, cfg.timeout, cfg.storeTimeout, LeaseMargin, need, need)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.toolTimeouts)) {
		d := cfg.toolTimeouts[name]
		positive(fmt.Sprintf("WithToolTimeout(%q)", name), d)
		if effectTable != nil {
			if _, err := effectTable.Get(name); err != nil {
				add("WithToolTimeout(%q): %v", name, err)
			}
		}
		if need, ok := leaseCovers(d); d > 0 && !ok {
			add("lease %v does not exceed the timeout %v of tool %q plus the store timeout %v plus the margin %v (%v): a claim could end before the tool's result is recorded, and another worker would run it again; set WithLease above %v, or lower the timeouts", cfg.lease, d, name, cfg.storeTimeout, LeaseMargin, need, need)
		}
	}
	if cfg.maxArgs <= 0 {
		add("WithMaxArgsBytes is %d: it must be positive (the default is toolreg.DefaultMaxArgsBytes)", cfg.maxArgs)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.toolMaxArgs)) {
		if n := cfg.toolMaxArgs[name]; n <= 0 {
			add("WithToolMaxArgsBytes(%q) is %d: it must be positive", name, n)
		}
		if effectTable != nil {
			if _, err := effectTable.Get(name); err != nil {
				add("WithToolMaxArgsBytes(%q): %v", name, err)
			}
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
	checkBudgetStore(effectTable, store, add) // budget.go
	if len(ps) > 0 {
		return nil, &ConfigError{Problems: ps}
	}
	tel, err := newTelemetry(&cfg, effectTable)
	if err != nil {
		return nil, err
	}
	return &Effector{table: effectTable, store: store, runner: NewToolRunner(), cfg: cfg, tel: tel}, nil
}

// Lease returns the claim lease the effector takes on each intent
// (WithLease, or DefaultLease): for a transport that must agree with it,
// such as natsstream.WithLease.
func (e *Effector) Lease() time.Duration { return e.cfg.lease }

// Process executes the intent at most once and returns its terminal result.
// Its phases, in order:
//
//  1. Verify the signature (see VerifyMode), then that the intent id is
//     intent.IntentID(EntityKey, Seq, StepIndex). An intent that fails, or
//     has no intent id, is refused: it goes to the dead-letter sink, nothing
//     is stored for it, and Process returns a *RefusedError. For an id that
//     does not match (*IntentIDError) Process also returns a REJECTED result
//     saying why, which is not stored; for the others no Result exists.
//  2. Refuse an intent whose expires_at_ms is not positive or not after now as
//     EXPIRED, without touching the store.
//  3. Claim its id in the store. If another worker holds it, wait (backoff
//     doubling from WithBackoff's minimum to its maximum, bounded by ctx; a
//     store that is an InFlightWaiter may end the wait early, when the owner
//     finishes) and claim again: never skip. If it is done, return the stored result,
//     byte-identical when marshaled, without executing anything. If an
//     earlier owner's lease ran out with no result (it crashed or stalled
//     after claiming), the intent is executed again, since only a recorded
//     result proves it ran: the function sees IntentInfo.Reclaimed, and the
//     result's error_message starts "effect unknown", because the earlier
//     owner may have applied the effect. Pass IntentInfo.ID downstream as an
//     idempotency key and the effect still happens once. If the id is known
//     for another call (another tool or other arguments: a non-deterministic
//     replay), the intent is REJECTED without the stored result, with a
//     *NonDeterministicError. Past WithMaxAttempts attempts, the intent is
//     given up: ERROR, and the dead-letter sink. The claim of an intent whose
//     tool's manifest declares budgets counts it against them, durably, in
//     the store (BudgetStore; see BudgetUse), once per intent id.
//  4. Resolve and validate: an unknown tool, a read-only tool, a tool with no
//     function, a principal (the intent's, which its signature covers) that
//     lacks one of the tool's scopes, a budget the claim found used up (the
//     message says which and when it frees), arguments above the size limit (WithMaxArgsBytes), malformed
//     JSON or arguments that break the tool's contract give REJECTED; the function is not invoked. An APPROVAL intent goes to
//     the approval sink instead, and is done (OK, payload
//     {"approval":"requested"}).
//  5. Execute through the ToolRunner under the tool's timeout. The function
//     finds the intent's identity with IntentFrom. Its context carries ctx's
//     values but not its cancelation nor its deadline: only the tool's
//     timeout (WithTimeout, WithToolTimeout) ends a call early. If the
//     timeout passes first, ERROR (effect unknown) is recorded at once,
//     before the lease can end, even if the function ignores its context;
//     Process returns it when the function returns.
//  6. Complete the claim with the terminal result: OK with the canonical JSON
//     of what the function returned; ERROR when it returned an error,
//     panicked, timed out, or returned something JSON cannot encode (it ran:
//     its effect is unknown, so it is never run again). A Complete that fails
//     is retried with backoff until the lease ends.
//
// Every result carries the intent's id, entity key and seq (a result
// `toolreg intents resolve` recorded, which has no intent to read them from,
// is given them as it is returned), and the clock's time as completed_at_ms. Results of phases 3 to 6 are stored, so a
// redelivered intent gets the same result. An EXPIRED result (phase 2) is
// returned with a nil error and logged at level Warn with the intent's age
// and time-to-live: check res.Status, not only err.
//
// When ctx ends while the function runs, Process returns a *DetachedError
// (errors.Is(err, context.Canceled) holds) at once, and nothing is recorded
// yet: the function runs on, detached, and its real result is recorded when
// it returns. Process the intent again (a redelivery) for that result: it
// waits for the running execution and returns what really happened, and the
// function runs once. If the process exits before the function returns, the
// claim lapses and the next owner runs the intent as reclaimed.
//
// An error means there is no result to publish. A *RefusedError means the
// intent was dead-lettered: acknowledge it, do not redeliver it. Any other
// error (ctx ended while waiting for another worker or while the function
// ran, the store failed, the store could not record a result in time
// (*UnrecordedError), the approval sink failed) leaves the intent to be
// redelivered and processed again: never acknowledge it. Nothing ran, or the
// store will answer with what did, or the next owner runs it as reclaimed.
func (e *Effector) Process(ctx context.Context, in *intent.Intent) (intent.Result, error) {
	return e.process(ctx, in, "")
}

// process is Process; resume is the approval whose execution in is, when
// Resume carries it out, else "". It is a parameter, not a context value,
// so that it costs no context walk and never reaches the function's
// context, where an intent the function processed would inherit it.
func (e *Effector) process(ctx context.Context, in *intent.Intent, resume string) (res intent.Result, err error) {
	if in == nil {
		return intent.Result{}, errors.New("effector: Process called with a nil intent: decode the delivery first, and dead-letter what does not decode")
	}
	ctx, span := e.tel.start(ctx, in)
	defer func() { e.tel.end(ctx, span, in, res, err) }()
	execution, err := e.verifyTraced(ctx, span, in)
	if err != nil {
		var ie *IntentIDError
		if errors.As(err, &ie) {
			// Its id names it, so it can be answered; it is never stored, since
			// the id may be another step's.
			return e.rejected(in, ie.Error()), e.refuse(ctx, in, err)
		}
		return intent.Result{}, e.refuse(ctx, in, err)
	}
	// An approval's execution that Resume carries out late is claimed
	// first: the recorded result if it ran, else gate records its outcome
	// (EXPIRED, or the denial) once, not answered anew on each Resume.
	if now := e.cfg.now(); expired(in, now) && resume == "" {
		return e.expiredResult(ctx, in, now), nil
	}
	backoff := e.cfg.minBackoff
	call := CallOf(in)
	tool, uses := e.budgeted(in, execution || resume != "") // budget.go
	for waited := false; ; waited = true {
		leaseEnd := monoNow() + int64(e.cfg.lease) // read before the store starts the lease
		c, adm, err := e.claim(ctx, span, in, call, uses)
		if err != nil {
			// A claim that failed because the caller's context ended says
			// nothing about the store: a shutdown must leave the intent to
			// be redelivered, never give it up.
			if n := deliveryCount(ctx); n > e.cfg.maxAttempts && ctx.Err() == nil {
				return e.giveUpUnclaimed(ctx, in, n, err)
			}
			return intent.Result{}, fmt.Errorf("effector: claiming intent %q: %w", in.ID, err)
		}
		switch c.State {
		case Mismatch:
			return e.mismatch(ctx, in, call, c.Recorded)
		case Done:
			res, err := storedResult(in, c.Result)
			if err == nil && e.cfg.logger.Enabled(ctx, slog.LevelDebug) {
				e.cfg.logger.DebugContext(ctx, "effector: intent already done", "intent_id", in.ID, "status", res.Status.String())
			}
			return res, err
		case Claimed:
			cl := claim{token: c.Token, leaseEnd: leaseEnd, reclaimed: c.Reclaimed, attempts: c.Attempts, execution: execution, resume: resume,
				overBudget: overBudget(tool, uses, adm)}
			if n := max(c.Attempts, deliveryCount(ctx)); n > e.cfg.maxAttempts {
				return e.giveUp(ctx, in, cl, n)
			}
			return e.executeClaimed(ctx, in, cl, waited)
		case InFlight:
			e.pause(ctx, in.ID, backoff, true)
			if ctx.Err() != nil {
				return intent.Result{}, fmt.Errorf("effector: intent %q: gave up waiting for the worker that holds it: %w", in.ID, context.Cause(ctx))
			}
			backoff = min(2*backoff, e.cfg.maxBackoff)
		default:
			return intent.Result{}, fmt.Errorf("effector: claiming intent %q: the store answered with unknown state %d", in.ID, int(c.State))
		}
	}
}

// pause waits backoff, or until ctx ends. For an intent another owner
// holds (inFlight), a store that can tell (InFlightWaiter) ends it as soon
// as the owner lets go.
func (e *Effector) pause(ctx context.Context, id string, backoff time.Duration, inFlight bool) {
	if w, ok := e.store.(InFlightWaiter); ok && inFlight {
		w.WaitInFlight(ctx, id, backoff)
		return
	}
	t := time.NewTimer(backoff)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// verify is phase 1. It reports whether in is the execution of an
// approval: a TOOL intent under intent.ExecutionID of the APPROVAL intent at
// its position, which phase 4 runs only if that approval was approved.
func (e *Effector) verify(in *intent.Intent) (execution bool, err error) {
	if in.ID == "" {
		return false, fmt.Errorf("%w: it has no intent_id, so it cannot be deduplicated nor answered", ErrMalformedIntent)
	}
	if !utf8.ValidString(in.ID) {
		return false, fmt.Errorf("%w: its intent_id %q is not valid UTF-8", ErrMalformedIntent, in.ID)
	}
	if e.cfg.mode != VerifyOff {
		err := in.VerifyHMAC(e.cfg.keys)
		if err != nil && (e.cfg.mode != VerifyPermissive || !errors.Is(err, intent.ErrUnsigned)) {
			return false, err
		}
	}
	if e.cfg.underivedIDs {
		return false, nil
	}
	if !intent.IsIntentID(in.ID, in.EntityKey, in.Seq, in.StepIndex) {
		want := intent.IntentID(in.EntityKey, in.Seq, in.StepIndex)
		if in.Kind != intent.KindApproval && in.ID == intent.ExecutionID(want) {
			return true, nil
		}
		return false, &IntentIDError{ID: in.ID, Want: want, EntityKey: bytes.Clone(in.EntityKey), Seq: in.Seq, Step: in.StepIndex}
	}
	return false, nil
}

func (e *Effector) refuse(ctx context.Context, in *intent.Intent, reason error) error {
	re := &RefusedError{IntentID: in.ID, Reason: reason}
	if e.cfg.deadLetter == nil {
		e.cfg.logger.WarnContext(ctx, "effector: intent refused", "intent_id", in.ID, "tool", in.ToolName, "reason", reason.Error())
		return re
	}
	re.SinkErr = e.cfg.deadLetter(ctx, in, reason)
	return re
}

func expired(in *intent.Intent, now time.Time) bool {
	return in.ExpiresAtMs <= 0 || in.ExpiresAtMs <= now.UnixMilli()
}

// expiredResult is the EXPIRED result of in, which is logged at level Warn
// with its age and time-to-live: nothing ran, and a caller that checks only
// Process's error would not notice.
func (e *Effector) expiredResult(ctx context.Context, in *intent.Intent, now time.Time) intent.Result {
	age := time.Duration(now.UnixMilli()-in.CreatedAtMs) * time.Millisecond
	ttl := time.Duration(in.ExpiresAtMs-in.CreatedAtMs) * time.Millisecond
	msg := fmt.Sprintf("effector: intent %q expired at %d ms (now %d ms; it was staged %v ago with a time-to-live of %v); nothing ran: process intents within their time-to-live, or stage them with a longer one (runner.WithIntentTTL; the default is 1h)", in.ID, in.ExpiresAtMs, now.UnixMilli(), age, ttl)
	if in.ExpiresAtMs <= 0 {
		msg = fmt.Sprintf("effector: intent %q has no expiry (expires_at_ms %d); nothing ran: stage intents with a time-to-live", in.ID, in.ExpiresAtMs)
	}
	e.cfg.logger.WarnContext(ctx, "effector: intent expired; nothing ran", "intent_id", in.ID, "tool", in.ToolName,
		"age", age, "ttl", ttl, "created_at_ms", in.CreatedAtMs, "expires_at_ms", in.ExpiresAtMs, "now_ms", now.UnixMilli())
	return e.result(in, intent.StatusExpired, nil, msg)
}

// claim is this owner's hold on an intent.
type claim struct {
	token     string
	leaseEnd  int64  // the monoNow reading by which the store's lease has ended
	reclaimed bool   // Claim.Reclaimed
	attempts  int    // Claim.Attempts; 0 when not known
	execution bool   // the intent is an approval's execution (verify)
	resume    string // the approval Resume carries out with this intent, or ""
	// overBudget is the budget the claim found used up (budget.go), or nil.
	overBudget *toolreg.BudgetError
	// batch is the Serve pipeline's item of the intent (pipeline.go), whose
	// completer writes its result with others in one store call; nil in
	// Process, which completes it alone.
	batch *item
}

// executeClaimed runs phases 4 to 6 for the owner of the claim.
func (e *Effector) executeClaimed(ctx context.Context, in *intent.Intent, cl claim, waited bool) (intent.Result, error) {
	res, done, err := e.outcome(ctx, in, cl, waited)
	if done {
		return res, err // executed: recorded, or left to lapse
	}
	if err != nil {
		// Nothing ran: let the next delivery try again at once.
		sctx, cancel := e.storeContext(ctx)
		defer cancel()
		if rerr := e.store.Release(sctx, in.ID, cl.token); rerr != nil {
			e.cfg.logger.WarnContext(ctx, "effector: releasing claim", "intent_id", in.ID, "error", rerr.Error())
		}
		return intent.Result{}, err
	}
	return e.record(ctx, in, cl, res)
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
// will answer.
//
// A Complete that fails is retried, with backoff, until the lease ends (the
// caller's context does not bound it: the outcome of a function that ran must
// be recorded). If it never succeeds, record returns an *UnrecordedError and
// no result, so the intent is not acknowledged: its claim lapses and the next
// owner runs it as reclaimed. A result the store does not hold is never
// reported as the intent's.
func (e *Effector) record(ctx context.Context, in *intent.Intent, cl claim, res intent.Result) (intent.Result, error) {
	buf := wireBufs.Get().(*[]byte)
	defer putWireBuf(buf)
	b, err := res.AppendBinary((*buf)[:0])
	*buf = b
	if err != nil {
		return intent.Result{}, fmt.Errorf("effector: intent %q: encoding its %s result: %w", in.ID, res.Status, err)
	}
	ttl := e.recordTTL(ctx, in, cl) // approval.go
	if cl.batch != nil && cl.batch.pl.comp.add(cl.batch, b, ttl, res) {
		// The completer owns it now: it writes it with others, and
		// publishes it only once it is durable (pipeline.go).
		return res, nil
	}
	attempts, err := e.complete(ctx, in.ID, cl.token, b, cl.leaseEnd, ttl)
	if errors.Is(err, ErrNotOwner) {
		return e.recordLate(ctx, in, b, res, ttl, cl.attempts)
	}
	if err != nil {
		return intent.Result{}, e.unrecorded(ctx, in, res, attempts, err)
	}
	if e.cfg.logger.Enabled(ctx, slog.LevelDebug) {
		e.cfg.logger.DebugContext(ctx, "effector: intent processed", "intent_id", in.ID, "tool", in.ToolName, "status", res.Status.String(), "error", res.ErrorMessage)
	}
	return res, nil
}

// complete calls Complete until it succeeds, the store says the token no
// longer owns the claim (ErrNotOwner), or the next attempt would start after
// leaseEnd; it returns the attempts made and the last error.
func (e *Effector) complete(ctx context.Context, id, token string, b []byte, leaseEnd int64, ttl time.Duration) (attempts int, err error) {
	ctx, span := e.tel.phase(ctx, phaseComplete)
	defer func() { endPhase(span, err) }()
	backoff := e.cfg.minBackoff
	for attempt := 1; ; attempt++ {
		sctx, cancel := e.storeContext(ctx)
		err := e.store.Complete(sctx, id, token, b, ttl)
		cancel()
		if err == nil || errors.Is(err, ErrNotOwner) {
			return attempt, err
		}
		wait := min(backoff, time.Duration(leaseEnd-monoNow()))
		if wait <= 0 {
			return attempt, err
		}
		e.storeRetry(ctx, span, "complete", id, attempt, err, wait) // telemetry.go: logged and counted
		time.Sleep(wait)
		backoff = min(2*backoff, e.cfg.maxBackoff)
	}
}

// unrecorded counts, logs once and returns the failure to record res.
func (e *Effector) unrecorded(ctx context.Context, in *intent.Intent, res intent.Result, attempts int, err error) error {
	e.stats.unrecorded.Add(1)
	e.cfg.logger.ErrorContext(ctx, "effector: result not recorded; the intent is left unacknowledged and its next owner runs it as reclaimed",
		"intent_id", in.ID, "tool", in.ToolName, "status", res.Status.String(), "attempts", attempts, "error", err.Error())
	return &UnrecordedError{IntentID: in.ID, Tool: in.ToolName, Result: res, Attempts: attempts, Err: err}
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

// storedResult decodes the result the store holds for in. A result of in's
// id with no entity key and seq 0 is one `toolreg intents resolve` recorded
// (the store keeps no intent it could read them from): it is given in's,
// which its id derives from, so that it carries them as every result does,
// the same on every delivery.
func storedResult(in *intent.Intent, b []byte) (intent.Result, error) {
	var res intent.Result
	if err := res.UnmarshalBinary(b); err != nil {
		return intent.Result{}, fmt.Errorf("effector: intent %q: the store's result is not a ToolResult (%w): the store is corrupt or shared with something else; give the effector a store (or key prefix) of its own", in.ID, err)
	}
	if len(res.EntityKey) == 0 && res.Seq == 0 && res.IntentID == in.ID {
		res.EntityKey, res.Seq = bytes.Clone(in.EntityKey), in.Seq
	}
	return res, nil
}

// recordLate handles a Complete refused because this owner's lease ended
// while it ran (it stalled, or was paused): another owner may have claimed
// the intent since.
//
// attempts is the Claim.Attempts of the claim res ran under (0 if not
// known): a claim again that finds more than one attempt since was preceded
// by another owner's.
func (e *Effector) recordLate(ctx context.Context, in *intent.Intent, b []byte, res intent.Result, ttl time.Duration, attempts int) (intent.Result, error) {
	e.cfg.logger.WarnContext(ctx, "effector: the claim's lease ended before the result was recorded: raise WithLease above the tool's run time", "intent_id", in.ID, "tool", in.ToolName)
	sctx, cancel := e.storeContext(ctx)
	leaseEnd := monoNow() + int64(e.cfg.lease)
	c, err := e.store.Claim(sctx, in.ID, CallOf(in), e.cfg.lease)
	cancel()
	if err != nil {
		return intent.Result{}, fmt.Errorf("effector: intent %q: its lease ended before its result was recorded, and the store cannot say what is recorded now: %w; redeliver it", in.ID, err)
	}
	switch c.State {
	case Done:
		return storedResult(in, c.Result)
	case Claimed:
		// No one else finished it: this execution's result is the one. If
		// another owner claimed it in between and stopped (an attempt
		// between this owner's and this claim), that owner may have run the
		// tool too. This owner's own lapsed claim makes the claim Reclaimed
		// with one attempt more, and says nothing of another.
		other := c.Reclaimed && (attempts == 0 || c.Attempts > attempts+1)
		if other && !strings.HasPrefix(res.ErrorMessage, unknownEffectPrefix) {
			res.ErrorMessage = withUnknownEffect(res.ErrorMessage)
			if b, err = res.MarshalBinary(); err != nil {
				return intent.Result{}, fmt.Errorf("effector: intent %q: encoding its %s result: %w", in.ID, res.Status, err)
			}
		}
		attempts, err := e.complete(ctx, in.ID, c.Token, b, leaseEnd, ttl)
		if err != nil {
			return intent.Result{}, e.unrecorded(ctx, in, res, attempts, err)
		}
		return res, nil
	default:
		return intent.Result{}, fmt.Errorf("effector: intent %q: its lease ended before its result was recorded, and another worker holds it now: redeliver it for that worker's result", in.ID)
	}
}

// outcome runs phases 4 and 5 and returns the terminal result, and whether
// the function was executed (then execute recorded the result, or err says
// why it is not recorded, and the claim must not be released). An error when
// nothing was executed means nothing is terminal: the claim is released.
func (e *Effector) outcome(ctx context.Context, in *intent.Intent, cl claim, waited bool) (res intent.Result, executed bool, err error) {
	// After waiting for another worker, the intent may have expired; it must
	// not run late.
	if waited {
		if now := e.cfg.now(); expired(in, now) {
			return e.expiredResult(ctx, in, now), false, nil
		}
	}
	switch in.Kind {
	case intent.KindTool, intent.KindUnspecified:
	case intent.KindApproval:
		res, err := e.approve(ctx, in)
		return res, false, err
	default:
		return e.rejected(in, fmt.Sprintf("effector: intent %q has kind %s, which this effector does not know: upgrade it", in.ID, in.Kind)), false, nil
	}
	t, err := e.table.Get(in.ToolName)
	switch {
	case err == nil && !t.SideEffect() || err != nil && isReadOnly(err):
		return e.rejected(in, fmt.Sprintf("effector: intent %q: tool %q is read-only: it belongs inline (runner.Activation.RunTool), never in an intent; nothing ran: fix the producer that staged it", in.ID, in.ToolName)), false, nil
	case err != nil:
		return e.rejected(in, err.Error()), false, nil
	case !t.Bound():
		return e.rejected(in, fmt.Sprintf("effector: tool %q has no function in the effect table: bind it with bindings.Effect", t.Name())), false, nil
	}
	if res, refused := e.authority(ctx, in, t, cl); refused { // budget.go
		return res, false, nil
	}
	if cl.execution || t.Spec().Approval != nil || cl.resume != "" {
		if res, run, err := e.gate(ctx, in, cl.resume); !run { // approval.go
			return res, false, err
		}
	}
	if limit := e.maxArgs(t.Name()); len(in.ArgsJSON) > limit {
		te := &toolreg.ArgumentsTooLargeError{Tool: t.Name(), Size: len(in.ArgsJSON), Limit: limit}
		return e.rejected(in, fmt.Sprintf("effector: intent %q: %v; nothing ran", in.ID, te)), false, nil
	}
	args, err := t.DecodeArgs(e.dropUnknownKeys(ctx, in, t))
	if err != nil {
		return e.rejected(in, err.Error()), false, nil
	}
	if err := ctx.Err(); err != nil {
		return intent.Result{}, false, fmt.Errorf("effector: intent %q not executed, its claim released: the caller's context ended first: %w; redeliver it", in.ID, context.Cause(ctx))
	}
	res, err = e.execute(ctx, in, t, args, cl)
	return res, true, err
}

// execute runs the tool's function through the ToolRunner under the tool's
// timeout, with args as phase 4 decoded them, records its terminal result
// and returns it.
//
// The caller's ctx does not reach the function's cancellation: only the
// tool's timeout ends it early. If the timeout passes while the function
// runs, a watchdog records ERROR (effect unknown) at once, so the outcome is
// in the store before the lease ends even when the function ignores its
// context; the call still waits for the function to return.
//
// When ctx can end, the function runs on a goroutine of its own and execute
// waits for it or for ctx: if ctx ends first, execute returns a
// *DetachedError at once, and the goroutine records the function's real
// outcome when it returns. Otherwise the function runs on the caller's
// goroutine, so a worker pool bounds how many run at once.
//
// A reclaimed claim says an earlier owner's claim ran out without a result:
// it may have run the function, so this run may repeat the effect. The
// function sees it in IntentInfo.Reclaimed, and the result says the effect
// is unknown.
func (e *Effector) execute(ctx context.Context, in *intent.Intent, t *toolreg.Tool, args any, cl claim) (intent.Result, error) {
	ctx, xt := e.startExecute(ctx, in)
	fctx, etx := ctx, EffectTx(nil)
	if tc, ok := e.store.(TxCompleter); ok {
		fctx, etx = tc.WithEffectTx(ctx, in.ID, cl.token)
	}
	x := e.start(fctx, in, e.timeout(t.Name()), cl)
	x.tel = xt
	x.etx = etx
	if ctx.Done() == nil {
		return x.run(t, args)
	}
	o := &detachable{done: make(chan struct{})}
	go func() {
		o.res, o.err = x.run(t, args)
		close(o.done)
	}()
	select {
	case <-o.done:
		return o.res, o.err
	case <-ctx.Done():
	}
	select {
	case <-o.done: // it returned as ctx ended: its result is ready
		return o.res, o.err
	default:
	}
	e.stats.detached.Add(1)
	cause := context.Cause(ctx)
	e.cfg.logger.WarnContext(ctx, "effector: the caller's context ended while the tool runs; it runs on, and its result is recorded if it returns before this process exits (else the intent runs again when redelivered, marked effect unknown)",
		"intent_id", in.ID, "tool", in.ToolName, "cause", cause.Error())
	return intent.Result{}, &DetachedError{IntentID: in.ID, Tool: in.ToolName, Cause: cause}
}

// detachable is the outcome of an execution on a goroutine of its own.
type detachable struct {
	done chan struct{} // closed once res and err are set
	res  intent.Result
	err  error
}

// run calls the function, records its outcome and returns it.
func (x *execution) run(t *toolreg.Tool, args any) (intent.Result, error) {
	v, err := x.e.runner.runDecoded(&x.execContext, t, args)
	x.e.endExecute(x.parent, x.tel, x.in, err)
	if !x.stop() {
		if x.etx != nil {
			x.etx.Rollback(x.parent) // the timeout's ERROR is recorded: the effect must not be
		}
		return x.interrupted.res, x.interrupted.err
	}
	res := x.result(t, v, err)
	if x.etx != nil && x.etx.Started() {
		return x.e.recordInTx(x.parent, x.in, x.etx, x.claim, res) // txstore.go
	}
	return x.e.record(x.parent, x.in, x.claim, res)
}

// result is the terminal result of a function that returned v and err.
func (x *execution) result(t *toolreg.Tool, v any, err error) intent.Result {
	if err != nil {
		return x.ran(intent.StatusError, nil, err.Error())
	}
	if !x.e.cfg.skipResults {
		if err := t.CheckResult(v); err != nil {
			return x.ran(intent.StatusError, nil, fmt.Sprintf("effector: tool %q ran, so its effect happened, but its result breaks the manifest's returns and is not published: %s", t.Name(), resultProblems(err)))
		}
	}
	payload, err := canonjson.Marshal(v)
	if err != nil {
		return x.ran(intent.StatusError, nil, fmt.Sprintf("effector: tool %q ran, but its result cannot be encoded as JSON: %v", t.Name(), err))
	}
	return x.ran(intent.StatusOK, payload, "")
}

// resultProblems lists a *toolreg.ToolResultError's problems.
func resultProblems(err error) string {
	var re *toolreg.ToolResultError
	if !errors.As(err, &re) {
		return err.Error()
	}
	ps := make([]string, len(re.Problems))
	for i, p := range re.Problems {
		ps[i] = p.String()
	}
	return strings.Join(ps, "; ")
}

// start sets up the execution of in under the caller's ctx: the context its
// function gets, and the watchdog that interrupts it after timeout.
func (e *Effector) start(ctx context.Context, in *intent.Intent, timeout time.Duration, cl claim) *execution {
	x := &execution{e: e, timeout: timeout, claim: cl}
	x.execContext.init(ctx, in, timeout)
	x.reclaimed = cl.reclaimed
	x.watchdog.exec = x
	x.wg.Add(1)
	e.timeouts.add(&x.watchdog, timeout)
	return x
}

// stop ends the execution once its function has returned, and cancels its
// context. It reports whether the return decides the result; if the
// timeout won, it returns once that ERROR is recorded, in x.interrupted.
func (x *execution) stop() bool {
	defer x.cancel(nil)
	x.e.timeouts.remove(&x.watchdog)
	if !x.state.CompareAndSwap(running, returned) {
		x.wg.Wait()
		return false
	}
	return true
}

// unknownEffect is the note on the result of a reclaimed execution.
const (
	unknownEffectPrefix = "effect unknown"
	unknownEffect       = unknownEffectPrefix + ": an earlier attempt claimed this intent and stopped without a result, so it may have run the tool; this attempt ran it again, which repeats the effect unless the downstream deduplicates on the intent id"
)

// withUnknownEffect puts unknownEffect before a result's error message.
func withUnknownEffect(msg string) string {
	if msg == "" {
		return unknownEffect
	}
	return unknownEffect + "; " + msg
}

// ran is the result of an execution whose function ran (or may have).
func (x *execution) ran(st intent.Status, payload []byte, msg string) intent.Result {
	if x.reclaimed {
		msg = withUnknownEffect(msg)
	}
	return x.e.result(x.in, st, payload, msg)
}

// execution is one run of a tool function, in one allocation: the context
// the function gets and the watchdog that may interrupt it.
type execution struct {
	execContext
	watchdog

	e       *Effector
	timeout time.Duration
	claim   claim
	tel     executing // telemetry.go
	etx     EffectTx  // the store's transaction for the effect, if it has one (txstore.go)
}

// timedOut records ERROR for a function that has not returned by its
// timeout, unless it returned first.
func (x *execution) timedOut() {
	if !x.state.CompareAndSwap(running, interrupted) {
		return
	}
	defer x.wg.Done()
	te := &TimeoutError{Tool: x.in.ToolName, Timeout: x.timeout}
	x.flags.Or(ctxExpired)
	x.cancel(te) // tell the function; it may not listen
	res, err := x.e.record(x.parent, x.in, x.claim, x.ran(intent.StatusError, nil, te.Error()))
	x.interrupted = &interruption{res: res, err: err}
}

func (e *Effector) rejected(in *intent.Intent, msg string) intent.Result {
	return e.result(in, intent.StatusRejected, nil, msg)
}

func (e *Effector) result(in *intent.Intent, st intent.Status, payload []byte, msg string) intent.Result {
	return intent.Result{
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

func (e *Effector) maxArgs(tool string) int {
	if n, ok := e.cfg.toolMaxArgs[tool]; ok {
		return n
	}
	return e.cfg.maxArgs
}

// isReadOnly reports whether err is a *toolreg.ReadOnlyToolError: the table
// knows the tool as one that runs inline. (A function of its own, so that the
// target of errors.As is allocated only on this path.)
func isReadOnly(err error) bool {
	var ro *toolreg.ReadOnlyToolError
	return errors.As(err, &ro)
}
