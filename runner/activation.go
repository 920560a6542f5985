package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/registry"
)

// DefaultIntentTTL is how long a staged intent stays executable unless
// WithIntentTTL says otherwise.
const DefaultIntentTTL = time.Hour

var (
	// ErrNoClock is returned by Act on an activation made without WithClock.
	ErrNoClock = errors.New("runner: the activation has no clock: pass runner.WithClock, such as the time of the activation's input event, so that a replay stages the same intents")
	// ErrDrained is returned by Drain, and by Act, once the activation has been drained.
	ErrDrained = errors.New("runner: the activation was already drained: its intents were handed over once; start a new activation for new work")
)

// Activation is the in-pipeline context of one activation: one step of one
// entity's agent, identified by (entity key, seq). Through it the pipeline runs
// read-only tools inline (RunTool) and requests side-effecting ones (Act),
// which it stages as intents for the effector and hands over with Drain.
//
// Act runs nothing and sends nothing. Each intent's id is IntentID(entity key,
// seq, step), where step counts the Act calls, so re-running the same
// activation with the same calls in the same order stages byte-identical
// intents, and the effector executes each at most once. An activation that
// fails must not be drained: it then leaves nothing behind, and its retry
// stages the same intents again.
//
// Nothing here reads the wall clock or randomness: created and expiry times
// come from the clock given with WithClock.
//
// An Activation is safe for concurrent use, but Act calls made concurrently
// take steps in whatever order they run; call Act from one goroutine, in a
// deterministic order, for ids that are stable across replays.
type Activation struct {
	pipeline  *registry.Registry
	entityKey []byte
	seq       int64
	runner    *Runner
	clock     func() time.Time
	ttl       time.Duration
	ttlErr    error // a bad WithIntentTTL, which Act returns
	sign      bool
	keyID     string
	key       []byte
	traceID   []byte // WithTraceID
	traceErr  error
	// spanParent is the remote parent of the inline runs' spans in the
	// trace traceID names (telemetry.go); invalid without a trace id.
	spanParent trace.SpanContext

	mu      sync.Mutex
	step    uint32
	full    bool // the step cursor has passed math.MaxUint32
	staged  []*intent.Intent
	drained bool
	// offered holds the names WithOffered and Offer gave; nil offers every
	// tool. See offer.go.
	offered map[string]bool

	// principal is WithPrincipal's (hasPrincipal: it was given); used
	// counts each tool's calls against its per-activation budget. See
	// authority.go.
	principal    *toolreg.Principal
	hasPrincipal bool
	lastCtx      atomic.Pointer[derivedCtx]
	used         atomic.Pointer[map[*toolreg.Tool]*atomic.Int64] // a tool of the pipeline is one *Tool
	usedMu       sync.Mutex                                      // adds to used
}

// ActivationOption configures an Activation.
type ActivationOption func(*Activation)

// WithClock sets the clock that dates staged intents (created_at_ms, and
// expires_at_ms = created + TTL). There is no default: without a clock Act
// returns ErrNoClock, since a clock the activation did not choose would make a
// replay stage different bytes. Pass one that a replay repeats, such as a
// function returning the activation's input event time; time.Now works where
// byte-identical replays do not matter.
func WithClock(now func() time.Time) ActivationOption {
	return func(a *Activation) { a.clock = now }
}

// WithIntentTTL sets how long after its creation an intent may still be
// executed; the effector refuses it as EXPIRED after that. The default is
// DefaultIntentTTL (1h). A d <= 0 would stage intents that expire as they
// are made: Act refuses to stage with it.
func WithIntentTTL(d time.Duration) ActivationOption {
	return func(a *Activation) {
		a.ttl = d
		a.ttlErr = nil
		if d <= 0 {
			a.ttlErr = fmt.Errorf("runner: WithIntentTTL(%v): an intent must live a positive time, or the effector refuses it as EXPIRED; pass a positive duration, or leave the option out for the default of %v", d, DefaultIntentTTL)
		}
	}
}

// WithStartStep sets the step index of the first Act. The default is 0; an
// activation that continues an earlier one's steps starts where it stopped.
func WithStartStep(step uint32) ActivationOption {
	return func(a *Activation) { a.step = step }
}

// WithRunner sets the Runner RunTool uses. The default is New() with no
// options.
func WithRunner(r *Runner) ActivationOption {
	return func(a *Activation) {
		if r != nil {
			a.runner = r
		}
	}
}

// WithSigningKey signs every staged intent with HMAC-SHA256 under keyID (see
// intent.Intent.SignHMAC), for an effector that requires signatures. The
// default is to stage intents unsigned. The key is copied; an empty key makes
// Act fail rather than stage unsigned intents.
func WithSigningKey(keyID string, key []byte) ActivationOption {
	return func(a *Activation) {
		a.sign = true
		a.keyID = keyID
		a.key = append([]byte(nil), key...)
	}
}

// WithTraceID stamps every staged intent with traceID, the 16-byte W3C
// trace id of the trace the activation belongs to (its input event's, as
// the pipeline received it), so the effector's execute_tool span joins that
// trace across processes (the intent's trace_id field, as beam-agents v1
// writes it). Take it from the activation's input, not from the current
// span: a replay must stage the same bytes, and a retried bundle runs in a
// new span. A trace id that is not 16 bytes, or all zero, makes Act fail.
//
// The activation's inline runs (RunTool, RunAll) join that trace too: when
// the caller's context holds no span of it, their execute_tool spans have
// a remote parent in it, whose span id is a pure function of the
// activation (the first 8 bytes of the SHA-256 of "activation|<hex of
// entity key>|<seq>"), the same for every run, and the caller's span, of
// another trace, is linked. A caller's span of the activation's trace
// stays their parent.
func WithTraceID(traceID []byte) ActivationOption {
	return func(a *Activation) {
		a.traceID, a.traceErr = bytes.Clone(traceID), nil
		if len(traceID) != 16 || bytes.Equal(traceID, make([]byte, 16)) {
			a.traceErr = fmt.Errorf("runner: WithTraceID(%x): a trace id is 16 bytes, not all zero (W3C trace context); pass the activation input's, such as trace.SpanContext.TraceID()", traceID)
		}
	}
}

// NewActivation returns the activation (entityKey, seq) over pipeline, the
// pipeline's table: every tool's contract, and the functions of read-only
// tools only (bindings.Bound.Pipeline). entityKey is copied.
func NewActivation(pipeline *registry.Registry, entityKey []byte, seq int64, opts ...ActivationOption) *Activation {
	a := &Activation{
		pipeline:  pipeline,
		entityKey: append([]byte(nil), entityKey...),
		seq:       seq,
		ttl:       DefaultIntentTTL,
	}
	for _, o := range opts {
		o(a)
	}
	if a.runner == nil {
		a.runner = New()
	}
	if len(a.traceID) == 16 && a.traceErr == nil {
		a.spanParent = activationParent(trace.TraceID(a.traceID), a.entityKey, a.seq)
	}
	return a
}

// Step returns the step index the next Act will take.
func (a *Activation) Step() uint32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.step
}

// RunTool runs the read-only tool called name inline, through the Runner, and
// returns its result; see Runner.Run for what it refuses (a side-effecting
// tool with *toolreg.SideEffectToolError, bad arguments with
// *toolreg.ToolArgumentError). An unknown name gives *toolreg.ToolNotFoundError;
// a name the activation does not offer (WithOffered), *toolreg.ToolNotOfferedError.
// A result that lists found tools (search_tools') offers them; see WithOffered.
// The tool runs with the activation's principal (WithPrincipal) unless ctx
// carries one: a tool whose scopes it lacks is refused with
// *toolreg.ScopeError, and a call over the tool's per_activation budget with
// *toolreg.BudgetError (calls refused for their arguments do not count);
// neither runs anything.
// It does not advance the step cursor: only intents take steps, so adding or
// removing a read-only call does not change the ids of the intents after it.
func (a *Activation) RunTool(ctx context.Context, name string, args json.RawMessage) (any, error) {
	// offered is nil or not from NewActivation on: an activation offering
	// every tool takes no lock here, whatever runs in parallel.
	if err := a.offeredErr(name); err != nil {
		return nil, err
	}
	t, err := a.pipeline.Get(name)
	if err != nil {
		return nil, err
	}
	ctx = a.withPrincipal(ctx)
	limit := perActivation(t)
	if limit > 0 {
		// Not counted against the budget: a call the caller may not make.
		if err := scopeErr(ctx, t); err != nil {
			return nil, err
		}
		if err := a.take(t, limit); err != nil {
			return nil, err
		}
	}
	res, err := a.runner.runIn(ctx, t, args, a.spanParent, limit > 0)
	if err == nil {
		a.offerFound(res)
	} else if limit > 0 {
		a.giveBack(t, err)
	}
	return res, err
}

// Act is ActContext with a context that carries nothing: the intent has no
// tool call id. See ActContext for what it stages and what it refuses.
func (a *Activation) Act(name string, args json.RawMessage) (*intent.Intent, error) {
	return a.ActContext(context.Background(), name, args)
}

// ActContext requests the side-effecting tool called name with args: it
// validates args against the tool's contract exactly as the runner would
// (toolreg.Tool.CheckArgs), stages an intent for the effector, advances the
// step cursor, and returns the intent. It runs nothing and sends nothing; the
// intent leaves only through Drain.
//
// The intent has kind TOOL, attempt 0, the canonical JSON of the validated
// args (coerced, defaults applied), id IntentID(entity key, seq, step),
// created/expiry times from the clock, and the caller's principal (ctx's,
// else the activation's: WithPrincipal). For a tool whose manifest says
// approval: required its kind is APPROVAL instead, with the same exact
// arguments, and it expires after the manifest's approval_timeout when it
// gives one: the effector executes the call only once a person approves it.
//
// It refuses, staging nothing and leaving the step where it was: an unknown
// name (*toolreg.ToolNotFoundError), a name the activation does not offer
// (WithOffered; *toolreg.ToolNotOfferedError), a read-only tool, which runs inline with
// RunTool instead (*toolreg.ReadOnlyToolError), a tool whose scopes the
// caller's principal lacks (*toolreg.ScopeError), a call
// over the tool's per_activation budget (*toolreg.BudgetError; only calls
// with valid arguments count), arguments that break the
// contract (*toolreg.ToolArgumentError), arguments above the runner's size
// limit (*toolreg.ArgumentsTooLargeError; see WithMaxArgsBytes), an activation
// with no clock (ErrNoClock) or a non-positive WithIntentTTL, and one already
// drained (ErrDrained). The intent it returns is the caller's copy: changing
// it changes nothing staged.
//
// ctx is the caller's, for a call a model made: the tool call id WithCallID
// put in it (the id the model gave the call) goes with the intent as its
// ToolCallID (toolreg's extension field 1000), which the effector records on
// its execute_tool span as gen_ai.tool.call.id, and which the signature
// covers. It is not part of the intent id: a replay that passes the same
// call id stages byte-identical intents, and one that passes another stages
// the same id. A ctx that has ended stages nothing and returns its error,
// leaving the step where it was.
func (a *Activation) ActContext(ctx context.Context, name string, args json.RawMessage) (*intent.Intent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	callID, _ := CallIDFromContext(ctx)
	who := a.principal // the context's, when it carries one
	if p, ok := toolreg.PrincipalFrom(ctx); ok {
		who = p
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.drained:
		return nil, ErrDrained
	case a.clock == nil:
		return nil, ErrNoClock
	case a.ttlErr != nil:
		return nil, a.ttlErr
	case a.traceErr != nil:
		return nil, a.traceErr
	case a.full:
		return nil, fmt.Errorf("runner: activation %x/%d has used every step index (the last was %d): no more intents fit in it; stage the rest in the next activation (seq %d)", a.entityKey, a.seq, uint32(math.MaxUint32), a.seq+1)
	}
	if err := a.checkOffered(name); err != nil {
		return nil, err
	}
	t, err := a.pipeline.Get(name)
	if err != nil {
		return nil, err
	}
	if !t.SideEffect() {
		return nil, &toolreg.ReadOnlyToolError{Name: name}
	}
	if err := principalErr(who, t); err != nil {
		return nil, err
	}
	if err := a.runner.checkSize(t, args); err != nil {
		return nil, err
	}
	canonical, err := t.CheckArgs(args)
	if err != nil {
		return nil, err
	}
	created := a.clock().UnixMilli()
	in := &intent.Intent{
		ID:          intent.IntentID(a.entityKey, a.seq, a.step),
		EntityKey:   bytes.Clone(a.entityKey), // each intent its own
		Seq:         a.seq,
		StepIndex:   a.step,
		ToolName:    t.Name(),
		ArgsJSON:    canonical,
		CreatedAtMs: created,
		ExpiresAtMs: created + a.ttl.Milliseconds(),
		Kind:        intent.KindTool,
		TraceID:     bytes.Clone(a.traceID),
		ToolCallID:  callID,
		Principal:   clonePrincipal(who),
	}
	if ap := t.Spec().Approval; ap != nil {
		// A person decides first: the intent asks for approval of exactly
		// this call, and its decision timeout, when the manifest gives one,
		// is how long it lives.
		in.Kind = intent.KindApproval
		if ap.Timeout > 0 {
			in.ExpiresAtMs = created + ap.Timeout.Milliseconds()
		}
	}
	if a.sign {
		if err := in.SignHMAC(a.keyID, a.key); err != nil {
			return nil, err
		}
	}
	if limit := perActivation(t); limit > 0 {
		if err := a.take(t, limit); err != nil {
			return nil, err
		}
	}
	a.staged = append(a.staged, in)
	if a.step == math.MaxUint32 {
		a.full = true
	} else {
		a.step++
	}
	// The caller gets its own copy: an edit of it must not change what Drain
	// hands over, nor break the staged intent's signature.
	return cloneIntent(in), nil
}

// cloneIntent returns a copy of in that shares no memory with it.
func cloneIntent(in *intent.Intent) *intent.Intent {
	c := *in
	c.EntityKey = bytes.Clone(in.EntityKey)
	c.ArgsJSON = bytes.Clone(in.ArgsJSON)
	c.TraceID = bytes.Clone(in.TraceID)
	c.Signature = bytes.Clone(in.Signature)
	c.Principal = clonePrincipal(in.Principal)
	return &c
}

// Drain hands over the staged intents, in the order they were staged, and
// ends the activation: a second Drain, and any later Act, returns ErrDrained.
// Call it only once the activation has succeeded; the caller then sends the
// intents to the effector.
func (a *Activation) Drain() ([]*intent.Intent, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.drained {
		return nil, ErrDrained
	}
	a.drained = true
	out := a.staged
	a.staged = nil
	return out, nil
}
