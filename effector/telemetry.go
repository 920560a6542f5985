package effector

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/genai"
	"github.com/beam-agents/toolreg/registry"
)

// WithTracerProvider sets the provider of the tracer that records an
// "execute_tool {tool}" span for every Process, with child spans for its
// phases ("effector.verify", "effector.claim", "effector.execute",
// "effector.complete"). The default is the global provider
// (otel.GetTracerProvider): nothing is exported unless the service sets one.
//
// The execute_tool span carries, as the OpenTelemetry GenAI conventions
// name them: gen_ai.operation.name ("execute_tool"), gen_ai.tool.name,
// gen_ai.tool.description (the manifest's, when the effect table holds the
// tool), gen_ai.tool.type ("function", or "approval" for an APPROVAL
// intent), gen_ai.tool.call.id (the model's tool call id the intent
// carries, intent.Intent.ToolCallID, when it carries one), and
// gen_ai.tool.call.arguments only with WithRecordArguments; and
// toolreg.intent.id (the intent id), toolreg.status (statusOf's names: ok,
// error, expired, rejected, refused, failed). A Process that ends without an
// OK result has error status and error.type, one of the values toolreg
// documents for runner and effector alike (see the README's Telemetry
// section): the typed error Process returns names it (refused intents by
// their reason: malformed_intent, signature, intent_id; non_deterministic,
// detached, unrecorded, store, timeout, canceled); else the result does:
// expired, rejected, and for ERROR the function's outcome in this Process
// (tool_error, tool_panic, timeout, result_refused), or tool_error. The
// execute phase's span has the function's error.type; the complete phase's
// span has a "retry" event per failed Complete tried again.
//
// An intent that carries a trace_id joins that trace: its span's parent is a
// remote span of that trace whose span id is derived from the intent id
// (the first 8 bytes of SHA-256 of it), so the effect shows in the staging
// activation's trace across processes. A span in the caller's ctx (a
// consumer's delivery span) is then linked, not the parent.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracerProvider = tp }
}

// WithMeterProvider sets the provider of the meter that records the
// effector's metrics; see the metric names below. The default is the global
// provider (otel.GetMeterProvider).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meterProvider = mp }
}

// WithRecordArguments records an intent's args_json on its execute_tool span
// as gen_ai.tool.call.arguments. Off by default: arguments may hold personal
// data, and spans often leave the service.
func WithRecordArguments(on bool) Option {
	return func(c *config) { c.recordArgs = on }
}

// Metric names the effector records. error.type, on the executions and
// durations that did not end OK, and toolreg.reason take their values from
// the same set as the spans' error.type.
const (
	MetricExecutions = "toolreg.effector.executions"        // counter: gen_ai.tool.name, toolreg.status, error.type
	MetricDuration   = "toolreg.effector.duration"          // histogram, s: gen_ai.tool.name, toolreg.status, error.type
	MetricClaimWaits = "toolreg.effector.claim.waits"       // counter: gen_ai.tool.name (the intent was in flight elsewhere)
	MetricReclaims   = "toolreg.effector.reclaims"          // counter: gen_ai.tool.name (effect unknown)
	MetricRejections = "toolreg.effector.rejections"        // counter: gen_ai.tool.name, toolreg.reason (refused, rejected or expired: its error.type)
	MetricInFlight   = "toolreg.effector.executions.active" // up-down counter: gen_ai.tool.name
	// MetricStoreRetries counts store writes Process tried again after they
	// failed, by toolreg.store.operation ("complete"): each is logged at level
	// Warn with the intent id and the store's error.
	MetricStoreRetries = "toolreg.effector.store.retries" // counter: toolreg.store.operation
	// MetricBudgetRefusals counts intents REJECTED because their tool's
	// per_entity budget was used up: gen_ai.tool.name, toolreg.budget.
	MetricBudgetRefusals = "toolreg.effector.budget.refusals"
)

const (
	statusKey   = attribute.Key("toolreg.status")
	reasonKey   = attribute.Key("toolreg.reason")
	storeOpKey  = attribute.Key("toolreg.store.operation")
	intentIDKey = attribute.Key("toolreg.intent.id")
	budgetKey   = attribute.Key("toolreg.budget")
)

// telemetry is an Effector's tracer and instruments; a nil tracer or nil
// instruments record nothing.
type telemetry struct {
	table      *registry.Registry   // the effect table: the tools' descriptions
	tp         trace.TracerProvider // nil: the global one
	tr         trace.Tracer
	recordArgs bool
	global     bool // the meter provider is the global one, asked on every call
	im         *instruments
	// ofGlobal holds the instruments of the global provider last seen, so a
	// provider a service sets (or replaces) after the Effector was made gets
	// the metrics; instruments of an earlier provider stay with it.
	ofGlobal *atomic.Pointer[globalInstruments]
}

type globalInstruments struct {
	mp metric.MeterProvider
	im *instruments
}

// metrics returns the instruments, or nil when they record nothing (a
// no-op provider, or the global one while no service has set one), so
// attribute sets are not even built. The global provider is asked on every
// call, at the cost of one comparison, so a provider a service sets, or
// replaces, after the Effector was made gets its metrics.
func (t *telemetry) metrics() *instruments {
	if !genai.Compiled {
		return nil
	}
	if !t.global {
		return t.im
	}
	if genai.GlobalMeterIsNoop() {
		return nil
	}
	mp := otel.GetMeterProvider()
	if c := t.ofGlobal.Load(); c != nil && reflect.TypeOf(mp).Comparable() && c.mp == mp {
		return c.im
	}
	im, err := newInstruments(mp)
	if err != nil {
		return nil // New made instruments of the same names; a provider that refuses them records nothing
	}
	t.ofGlobal.Store(&globalInstruments{mp: mp, im: im})
	return im
}

type instruments struct {
	executions, claimWaits, reclaims, rejections, storeRetries metric.Int64Counter
	budgetRefusals                                             metric.Int64Counter
	duration                                                   metric.Float64Histogram
	inFlight                                                   metric.Int64UpDownCounter
}

func newTelemetry(cfg *config, table *registry.Registry) (telemetry, error) {
	t := telemetry{table: table, tp: cfg.tracerProvider, recordArgs: cfg.recordArgs}
	if t.tp != nil {
		t.tr = genai.Tracer(t.tp)
	}
	mp := cfg.meterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
		t.global = true
		t.ofGlobal = new(atomic.Pointer[globalInstruments])
	} else if genai.IsNoop(mp) {
		return t, nil
	}
	// Made now even for the global provider, so that New reports a
	// provider that refuses them.
	im, err := newInstruments(mp)
	if err != nil {
		return t, err
	}
	if t.global {
		t.ofGlobal.Store(&globalInstruments{mp: mp, im: im})
	} else {
		t.im = im
	}
	return t, nil
}

// newInstruments makes the Effector's instruments of mp.
func newInstruments(mp metric.MeterProvider) (*instruments, error) {
	m := mp.Meter(genai.Scope)
	var (
		in  instruments
		err error
		e   error
	)
	in.executions, e = m.Int64Counter(MetricExecutions, metric.WithDescription("Intents processed, by tool and terminal status."))
	err = errors.Join(err, e)
	in.claimWaits, e = m.Int64Counter(MetricClaimWaits, metric.WithDescription("Claims that found the intent in flight with another worker and waited."))
	err = errors.Join(err, e)
	in.reclaims, e = m.Int64Counter(MetricReclaims, metric.WithDescription("Claims of an intent whose earlier claim lapsed without a result: its effect is unknown."))
	err = errors.Join(err, e)
	in.rejections, e = m.Int64Counter(MetricRejections, metric.WithDescription("Intents refused or rejected without running, by reason."))
	err = errors.Join(err, e)
	in.budgetRefusals, e = m.Int64Counter(MetricBudgetRefusals, metric.WithDescription("Intents rejected because a budget of their tool was used up, by tool and budget."))
	err = errors.Join(err, e)
	in.duration, e = m.Float64Histogram(MetricDuration, metric.WithUnit("s"), metric.WithDescription("Time a tool's function ran, by tool and status."))
	err = errors.Join(err, e)
	in.inFlight, e = m.Int64UpDownCounter(MetricInFlight, metric.WithDescription("Tool functions running now."))
	err = errors.Join(err, e)
	in.storeRetries, e = m.Int64Counter(MetricStoreRetries, metric.WithDescription("Store writes tried again after they failed, by store operation."))
	err = errors.Join(err, e)
	if err != nil {
		return nil, fmt.Errorf("effector: creating metric instruments: %w", err)
	}
	return &in, nil
}

// tracer is the Effector's tracer; nil when it records nothing (see
// metrics), so Process skips its spans and their contexts.
func (t *telemetry) tracer() trace.Tracer {
	if !genai.Compiled {
		return nil
	}
	if t.tp != nil {
		return t.tr
	}
	return genai.GlobalTracer()
}

// processNote is what the hooks of one Process learn on the way, for its
// span's error.type and its metrics: the claim hook notes a store failure,
// the execute hook the function's outcome. end reads it once Process
// returns; a detached function may still write fn then, so fields are
// atomic.
type processNote struct {
	span        trace.Span // Process's execute_tool span; nil when no tracer records
	fn          atomic.Uint32
	storeFailed atomic.Bool
	timeout     time.Duration // the tool's, set as its function starts (before the goroutine it may run on)
}

// The function's outcome in processNote.fn: fnNone (it did not run in this
// Process), fnReturned (it returned a value before its timeout), fnLate (it
// returned a value after its timeout had passed: the watchdog's ERROR is
// the result, unless the function beat the watchdog by a hair, when its own
// refused result is taken for a timeout), or fnFailed plus the index in
// genai.ErrorTypes of its error's type.
const (
	fnNone uint32 = iota
	fnReturned
	fnLate
	fnFailed
)

type noteKey struct{}

// noteOf returns the note start put in ctx, or nil.
func noteOf(ctx context.Context) *processNote {
	n, _ := ctx.Value(noteKey{}).(*processNote)
	return n
}

// start starts the execute_tool span of in's Process, and its note; neither
// when nothing records.
func (t *telemetry) start(ctx context.Context, in *intent.Intent) (context.Context, trace.Span) {
	tr := t.tracer()
	if tr == nil {
		if t.metrics() == nil {
			return ctx, nil
		}
		return context.WithValue(ctx, noteKey{}, new(processNote)), nil
	}
	var opts []trace.SpanStartOption
	if len(in.TraceID) == 16 {
		var tid trace.TraceID
		copy(tid[:], in.TraceID)
		if tid.IsValid() {
			if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && sc.TraceID() != tid {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
			}
			ctx = trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: tid, SpanID: IntentSpanID(in.ID), TraceFlags: trace.FlagsSampled, Remote: true,
			}))
		}
	}
	ctx, span := tr.Start(ctx, genai.ExecuteTool, opts...)
	if span.IsRecording() {
		span.SetName(genai.SpanName(in.ToolName))
		// In one call of the size it needs: the SDK grows its attributes once.
		d := t.description(in.ToolName)
		n := 4
		for _, set := range [...]bool{in.ToolCallID != "", d != "", t.recordArgs} {
			if set {
				n++
			}
		}
		attrs := make([]attribute.KeyValue, 4, n)
		attrs[0], attrs[1], attrs[2], attrs[3] = genai.Operation, genai.ToolName.String(in.ToolName),
			genai.ToolType.String(toolType(in)), intentIDKey.String(in.ID)
		if in.ToolCallID != "" {
			attrs = append(attrs, genai.ToolCallID.String(in.ToolCallID))
		}
		if d != "" {
			attrs = append(attrs, genai.ToolDescription.String(d))
		}
		if t.recordArgs {
			attrs = append(attrs, genai.ToolArguments.String(string(in.ArgsJSON)))
		}
		span.SetAttributes(attrs...)
	}
	return context.WithValue(ctx, noteKey{}, &processNote{span: span}), span
}

// description is the manifest's description of the tool called name, if
// the effect table holds it.
func (t *telemetry) description(name string) string {
	if t.table == nil {
		return ""
	}
	tool, err := t.table.Get(name)
	if err != nil {
		return ""
	}
	return tool.Description()
}

// IntentSpanID is the span id of the remote parent an intent's execute_tool
// span joins when the intent carries a trace_id: the first 8 bytes of the
// SHA-256 of its intent id. A producer that records a span for staging the
// intent under this id makes the link exact.
func IntentSpanID(intentID string) trace.SpanID {
	sum := sha256.Sum256([]byte(intentID))
	var id trace.SpanID
	copy(id[:], sum[:8])
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

func toolType(in *intent.Intent) string {
	if in.Kind == intent.KindApproval {
		return "approval"
	}
	return "function"
}

// end ends Process's span and counts its outcome.
func (t *telemetry) end(ctx context.Context, span trace.Span, in *intent.Intent, res intent.Result, err error) {
	m := t.metrics()
	if m == nil && span == nil {
		return
	}
	status := statusOf(res, err)
	typ := errorTypeOf(noteOf(ctx), res, err)
	if m != nil {
		tool := genai.ToolName.String(in.ToolName)
		if typ == "" {
			m.executions.Add(ctx, 1, metric.WithAttributes(tool, statusKey.String(status)))
		} else {
			m.executions.Add(ctx, 1, metric.WithAttributes(tool, statusKey.String(status), genai.ErrorType.String(typ)))
		}
		switch status {
		case "refused", "rejected", "expired":
			m.rejections.Add(ctx, 1, metric.WithAttributes(tool, reasonKey.String(typ)))
		}
	}
	if span == nil {
		return
	}
	if span.IsRecording() {
		switch {
		case err != nil:
			span.SetStatus(codes.Error, err.Error())
		case res.Status != intent.StatusOK:
			span.SetStatus(codes.Error, res.ErrorMessage)
		}
		if typ != "" {
			span.SetAttributes(statusKey.String(status), genai.ErrorType.String(typ))
		} else {
			span.SetAttributes(statusKey.String(status))
		}
	}
	span.End()
}

// statusOf names the outcome of a Process: the result's status, or
// "refused" or "failed" (no result: redeliver).
func statusOf(res intent.Result, err error) string {
	if err != nil {
		var re *RefusedError
		if errors.As(err, &re) {
			return "refused"
		}
		return "failed"
	}
	switch res.Status {
	case intent.StatusOK:
		return "ok"
	case intent.StatusError:
		return "error"
	case intent.StatusExpired:
		return "expired"
	case intent.StatusRejected:
		return "rejected"
	}
	return res.Status.String()
}

// errorTypeOf is the error.type of a Process that returned res and err,
// with what its hooks noted in n (nil when none): "" for an OK result. The
// typed error decides; else the result's status, and for ERROR what the
// function did in this Process. (A REJECTED result is "rejected" whatever
// refused it: its error_message says which check.)
func errorTypeOf(n *processNote, res intent.Result, err error) string {
	if err != nil {
		if typ := errorType(err); typ != genai.ErrorOther {
			return typ
		}
		if n != nil && n.storeFailed.Load() {
			return genai.ErrorStore
		}
		return genai.ErrorOther
	}
	switch res.Status {
	case intent.StatusOK:
		return ""
	case intent.StatusExpired:
		return genai.ErrorExpired
	case intent.StatusRejected:
		return genai.ErrorRejected
	case intent.StatusError:
		if n == nil {
			return genai.ErrorTool
		}
		switch fn := n.fn.Load(); {
		case fn == fnReturned: // it returned a value, and ERROR is the verdict on it
			return genai.ErrorResultRefused
		case fn == fnLate:
			return genai.ErrorTimeout
		case fn >= fnFailed && int(fn-fnFailed) < len(genai.ErrorTypes):
			return genai.ErrorTypes[fn-fnFailed]
		}
		return genai.ErrorTool // a stored ERROR, or an intent given up
	}
	return genai.ErrorOther
}

// errorType is the error.type of an error Process or a phase returned: the
// effector's own kinds first (a DetachedError is also context.Canceled),
// then the kinds runner shares (genai.ErrorTypeOf); genai.ErrorOther for
// the rest.
func errorType(err error) string {
	var (
		re  *RefusedError
		ide *IntentIDError
		nde *NonDeterministicError
		de  *DetachedError
		ue  *UnrecordedError
	)
	switch {
	case errors.As(err, &re) && re.Reason != nil:
		return errorType(re.Reason)
	case errors.As(err, &ide):
		return genai.ErrorIntentID
	case errors.Is(err, ErrMalformedIntent):
		return genai.ErrorMalformedIntent
	case errors.Is(err, intent.ErrUnsigned), errors.Is(err, intent.ErrUnknownKey), errors.Is(err, intent.ErrBadSignature):
		return genai.ErrorSignature
	case errors.As(err, &nde):
		return genai.ErrorNonDeterministic
	case errors.As(err, &de):
		return genai.ErrorDetached
	case errors.As(err, &ue):
		return genai.ErrorUnrecorded
	}
	if typ := genai.ErrorTypeOf(err); typ != "" {
		return typ
	}
	return genai.ErrorOther
}

// functionOutcome is processNote.fn for a function that returned err after
// running for ran of its timeout.
func functionOutcome(err error, ran, timeout time.Duration) uint32 {
	if err == nil {
		if ran >= timeout {
			return fnLate
		}
		return fnReturned
	}
	return fnFailed + uint32(slices.Index(genai.ErrorTypes, functionErrorType(err)))
}

// functionErrorType is the error.type of the error a tool's function
// returned: a kind runner names alike, or tool_error for its own.
func functionErrorType(err error) string {
	if typ := genai.ErrorTypeOf(err); typ != "" {
		return typ
	}
	return genai.ErrorTool
}

// Phase span names.
const (
	phaseVerify   = "effector.verify"
	phaseClaim    = "effector.claim"
	phaseExecute  = "effector.execute"
	phaseComplete = "effector.complete"
)

// phaseUnder starts a phase span as a child of root, Process's span; none
// if root is nil (nothing records).
func phaseUnder(ctx context.Context, root trace.Span, name string) (context.Context, trace.Span) {
	if root == nil {
		return ctx, nil // inlined: nothing records, nothing to call
	}
	return startPhase(ctx, root, name)
}

func startPhase(ctx context.Context, root trace.Span, name string) (context.Context, trace.Span) {
	return root.TracerProvider().Tracer(genai.Scope).Start(trace.ContextWithSpan(ctx, root), name)
}

// note returns Process's note, from ctx; nil when nothing records.
func (t *telemetry) note(ctx context.Context) *processNote {
	if t.tracer() == nil && t.metrics() == nil {
		return nil // no note was made: no walk down the caller's context chain
	}
	return noteOf(ctx)
}

// phase starts a phase span as a child of Process's span, which it finds in
// ctx; phaseUnder is cheaper where the caller holds it.
func (t *telemetry) phase(ctx context.Context, name string) (context.Context, trace.Span) {
	if t.tracer() == nil {
		// Nothing records: no root span to look up, and no walk down a
		// context chain however deep the caller's is.
		return ctx, nil
	}
	n := noteOf(ctx)
	if n == nil || n.span == nil {
		return ctx, nil
	}
	return phaseUnder(ctx, n.span, name)
}

func endPhase(span trace.Span, err error) {
	if span != nil { // inlined: nothing records, nothing to call
		finishPhase(span, err)
	}
}

// finishPhase ends a phase span; a failed verify, claim or complete phase
// has the error's type, and an untyped error there is the store's.
func finishPhase(span trace.Span, err error) {
	if err != nil {
		typ := errorType(err)
		if typ == genai.ErrorOther {
			typ = genai.ErrorStore
		}
		failPhase(span, err, typ)
	}
	span.End()
}

func failPhase(span trace.Span, err error, typ string) {
	if span.IsRecording() {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(genai.ErrorType.String(typ))
	}
}

// verifyTraced is verify in its phase span under root.
func (e *Effector) verifyTraced(ctx context.Context, root trace.Span, in *intent.Intent) (execution bool, err error) {
	_, span := phaseUnder(ctx, root, phaseVerify)
	execution, err = e.verify(in)
	endPhase(span, err)
	return execution, err
}

// claim is the store's Claim in its phase span under root, counted.
func (e *Effector) claim(ctx context.Context, root trace.Span, in *intent.Intent, call Call, uses []BudgetUse) (Claim, Admission, error) {
	sctx, span := phaseUnder(ctx, root, phaseClaim)
	var c Claim
	var adm Admission
	var err error
	if uses != nil {
		c, adm, err = e.store.(BudgetStore).ClaimAdmit(sctx, in.ID, call, e.cfg.lease, uses)
	} else {
		c, err = e.store.Claim(sctx, in.ID, call, e.cfg.lease)
	}
	if err == nil {
		e.countClaim(ctx, in, c)
		if span != nil && span.IsRecording() {
			span.SetAttributes(attribute.String("toolreg.claim.state", c.State.String()), attribute.Bool("toolreg.claim.reclaimed", c.Reclaimed))
		}
	} else if n := e.tel.note(ctx); n != nil {
		n.storeFailed.Store(true)
	}
	endPhase(span, err)
	return c, adm, err
}

// countClaim counts a claim that waits for another owner or reclaims.
func (e *Effector) countClaim(ctx context.Context, in *intent.Intent, c Claim) {
	// The common case, a fresh claim, counts nothing: not even asked.
	if wait, reclaim := c.State == InFlight, c.State == Claimed && c.Reclaimed; wait || reclaim {
		if m := e.tel.metrics(); m != nil && wait {
			m.claimWaits.Add(ctx, 1, metric.WithAttributes(genai.ToolName.String(in.ToolName)))
		} else if m != nil {
			m.reclaims.Add(ctx, 1, metric.WithAttributes(genai.ToolName.String(in.ToolName)))
		}
	}
}

// executing is the telemetry of one run of a tool's function.
type executing struct {
	span  trace.Span
	m     *instruments // as at the start, so the in-flight count balances
	note  *processNote // Process's, told the function's outcome
	start int64        // monoNow at the start, when m or note is set
}

// startExecute starts the execute phase of in: its span is in the context
// the function gets, so the function's own spans are its children.
func (e *Effector) startExecute(ctx context.Context, in *intent.Intent) (context.Context, executing) {
	x := executing{m: e.tel.metrics()}
	if e.tel.tracer() == nil && x.m == nil {
		return ctx, x // nothing records: no note to look up
	}
	if x.note = noteOf(ctx); x.note != nil {
		ctx, x.span = phaseUnder(ctx, x.note.span, phaseExecute)
		x.note.timeout = e.timeout(in.ToolName)
	}
	if m := x.m; m != nil {
		m.inFlight.Add(ctx, 1, metric.WithAttributes(genai.ToolName.String(in.ToolName)))
	}
	if x.m != nil || x.note != nil {
		x.start = monoNow()
	}
	return ctx, x
}

// endExecute ends the execute phase of in with the function's outcome.
func (e *Effector) endExecute(ctx context.Context, x executing, in *intent.Intent, err error) {
	if x.m != nil || x.span != nil || x.note != nil { // inlined: nothing records, nothing to call
		finishExecute(ctx, x, in, err)
	}
}

func finishExecute(ctx context.Context, x executing, in *intent.Intent, err error) {
	ran := time.Duration(monoNow() - x.start)
	if x.note != nil {
		x.note.fn.Store(functionOutcome(err, ran, x.note.timeout))
	}
	if m := x.m; m != nil {
		tool := genai.ToolName.String(in.ToolName)
		m.inFlight.Add(ctx, -1, metric.WithAttributes(tool))
		if err == nil {
			m.duration.Record(ctx, ran.Seconds(), metric.WithAttributes(tool, statusKey.String("ok")))
		} else {
			m.duration.Record(ctx, ran.Seconds(), metric.WithAttributes(tool, statusKey.String("error"), genai.ErrorType.String(functionErrorType(err))))
		}
	}
	if x.span != nil {
		if err != nil {
			failPhase(x.span, err, functionErrorType(err))
		}
		x.span.End()
	}
}

// storeRetry reports a store write for intent id (op, such as "complete")
// that failed and that Process tries again after wait: a warn line with the
// intent id and the store's error, MetricStoreRetries and Stats, and a
// "retry" event on span, the operation's phase span (nil when nothing
// records). A store that recovers (a database restarted mid-run) would
// otherwise leave no trace.
func (e *Effector) storeRetry(ctx context.Context, span trace.Span, op, id string, attempt int, err error, wait time.Duration) {
	e.stats.storeRetries.Add(1)
	e.cfg.logger.WarnContext(ctx, "effector: store "+op+" failed; retrying", "intent_id", id, "operation", op,
		"attempt", attempt, "error", err.Error(), "backoff", wait)
	if m := e.tel.metrics(); m != nil {
		m.storeRetries.Add(ctx, 1, metric.WithAttributes(storeOpKey.String(op)))
	}
	if span != nil && span.IsRecording() {
		span.AddEvent("retry", trace.WithAttributes(storeOpKey.String(op), attribute.Int("toolreg.store.attempt", attempt),
			attribute.String("exception.message", err.Error())))
	}
}
