package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/genai"
)

// WithTracerProvider sets the provider of the tracer that records an
// "execute_tool {tool}" span for every Run (and every call of RunAll, and
// an Activation's RunTool and RunAll). The default is the global provider
// (otel.GetTracerProvider), so a service's existing setup just works and
// nothing is exported unless the service configures an exporter. A nil tp
// keeps the default.
//
// The span's attributes, as the OpenTelemetry GenAI conventions name them:
// gen_ai.operation.name ("execute_tool"), gen_ai.tool.name,
// gen_ai.tool.description (the manifest's), gen_ai.tool.type ("function"),
// gen_ai.tool.call.id when the call has one (WithCallID, Call.ID), and
// gen_ai.tool.call.arguments only with WithRecordArguments. A failed run has
// error status and error.type, one of the values toolreg documents for
// runner and effector alike (see the README's Telemetry section):
// argument_refused, arguments_too_large, side_effect_refused, not_bound,
// tool_panic, result_refused, timeout and canceled (the context's errors,
// also when the function returns them), and tool_error for any other error
// the function returns. The span is a child of the span in the caller's
// context, except in an Activation with WithTraceID, where it joins the
// activation's trace (see WithTraceID).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(r *Runner) { r.tp = tp }
}

// WithRecordArguments records a call's JSON arguments on its span as
// gen_ai.tool.call.arguments. Off by default: arguments may hold personal
// data, and spans often leave the service.
func WithRecordArguments(on bool) Option {
	return func(r *Runner) { r.recordArgs = on }
}

// tracer is the Runner's tracer, from its provider or the global one; nil
// when it records nothing, so Run skips the span, its context and its
// attributes: with no provider set (or a no-op one) telemetry costs Run one
// comparison. The global provider is asked on every call, so one a service
// sets after New is used from then on.
func (r *Runner) tracer() trace.Tracer {
	if !genai.Compiled {
		return nil
	}
	if r.tp != nil {
		return r.tr
	}
	return genai.GlobalTracer()
}

// runTraced is run in an execute_tool span of tr. The span starts under a
// fixed name and gets its attributes only if it records, so a sampler that
// drops it costs little; samplers see the name "execute_tool".
//
// A valid parent (an Activation's with WithTraceID, see joinTrace) puts the
// span in parent's trace when ctx's span is of another one.
func (r *Runner) runTraced(ctx context.Context, tr trace.Tracer, t *toolreg.Tool, args json.RawMessage, parent trace.SpanContext, scoped bool) (any, error) {
	var opts []trace.SpanStartOption
	if parent.IsValid() {
		ctx, opts = joinTrace(ctx, parent)
	}
	ctx, span := tr.Start(ctx, genai.ExecuteTool, opts...)
	if span.IsRecording() {
		span.SetName(genai.SpanName(t.Name()))
		// In one call of the size it needs: the SDK grows its attributes once.
		d := t.Description()
		id, hasID := CallIDFromContext(ctx)
		n := 3
		for _, set := range [...]bool{d != "", hasID, r.recordArgs} {
			if set {
				n++
			}
		}
		attrs := make([]attribute.KeyValue, 3, n)
		attrs[0], attrs[1], attrs[2] = genai.Operation, genai.ToolName.String(t.Name()), genai.ToolType.String("function")
		if d != "" {
			attrs = append(attrs, genai.ToolDescription.String(d))
		}
		if hasID {
			attrs = append(attrs, genai.ToolCallID.String(id))
		}
		if r.recordArgs {
			attrs = append(attrs, genai.ToolArguments.String(string(args)))
		}
		span.SetAttributes(attrs...)
	}
	res, err := r.run(ctx, t, args, scoped)
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(genai.ErrorType.String(errorType(err)))
	}
	span.End()
	return res, err
}

// errorType is the error.type of err: a kind runner and effector name
// alike, or tool_error for an error of the function's own.
func errorType(err error) string {
	if typ := genai.ErrorTypeOf(err); typ != "" {
		return typ
	}
	return genai.ErrorTool
}

// activationSpanID is the span id of the remote parent the inline runs of
// an activation with WithTraceID have: the first 8 bytes of the SHA-256 of
// "activation|<hex of entity key>|<seq>", a pure function of the
// activation, as the effector derives its intents' parents from their ids.
func activationSpanID(entityKey []byte, seq int64) trace.SpanID {
	sum := sha256.Sum256([]byte("activation|" + hex.EncodeToString(entityKey) + "|" + strconv.FormatInt(seq, 10)))
	var id trace.SpanID
	copy(id[:], sum[:8])
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

// activationParent is the remote parent of the spans of an activation's
// inline runs (see WithTraceID): in its trace tid, with the span id
// activationSpanID gives.
func activationParent(tid trace.TraceID, entityKey []byte, seq int64) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: activationSpanID(entityKey, seq), TraceFlags: trace.FlagsSampled, Remote: true})
}

// joinTrace returns ctx under parent, and the option linking the caller's
// span it replaces, unless ctx's span is already of parent's trace.
func joinTrace(ctx context.Context, parent trace.SpanContext) (context.Context, []trace.SpanStartOption) {
	sc := trace.SpanContextFromContext(ctx)
	if sc.TraceID() == parent.TraceID() {
		return ctx, nil
	}
	var opts []trace.SpanStartOption
	if sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	return trace.ContextWithRemoteSpanContext(ctx, parent), opts
}

type callIDKey struct{}

// WithCallID returns ctx carrying the tool call id of the model's call (the
// id the model gave it, or the JSON-RPC id of an MCP tools/call): Run
// records it on its span as gen_ai.tool.call.id, and Activation.ActContext
// keeps it with the intent it stages, for the effector's span.
func WithCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

// CallIDFromContext returns the tool call id WithCallID put in ctx.
func CallIDFromContext(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(callIDKey{}).(string)
	return id, ok && id != ""
}
