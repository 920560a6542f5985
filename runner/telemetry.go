package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/genai"
)

// WithTracerProvider sets the provider of the tracer that records an
// "execute_tool {tool}" span for every Run (and every call of RunAll, Act's
// inline runs and RunTool). The default is the global provider
// (otel.GetTracerProvider), so a service's existing setup just works and
// nothing is exported unless the service configures an exporter. A nil tp
// keeps the default.
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
func (r *Runner) runTraced(ctx context.Context, tr trace.Tracer, t *toolreg.Tool, args json.RawMessage, scoped bool) (any, error) {
	ctx, span := tr.Start(ctx, genai.ExecuteTool)
	if span.IsRecording() {
		span.SetName(genai.SpanName(t.Name()))
		span.SetAttributes(genai.Operation, genai.ToolName.String(t.Name()), genai.ToolType.String("function"))
		if id, ok := CallIDFromContext(ctx); ok {
			span.SetAttributes(genai.ToolCallID.String(id))
		}
		if r.recordArgs {
			span.SetAttributes(genai.ToolArguments.String(string(args)))
		}
	}
	res, err := r.run(ctx, t, args, scoped)
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(genai.ErrorType.String(errorType(err)))
	}
	span.End()
	return res, err
}

// errorType is the error.type of err: the toolreg error kind it is, or its
// Go type.
func errorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	var (
		argErr   *toolreg.ToolArgumentError
		sizeErr  *toolreg.ArgumentsTooLargeError
		sideErr  *toolreg.SideEffectToolError
		panicErr *toolreg.ToolPanicError
		resErr   *toolreg.ToolResultError
		scopeErr *toolreg.ScopeError
	)
	switch {
	case errors.As(err, &scopeErr):
		return "scope"
	case errors.As(err, &argErr):
		return "tool_argument"
	case errors.As(err, &sizeErr):
		return "arguments_too_large"
	case errors.As(err, &sideErr):
		return "side_effect_tool"
	case errors.As(err, &panicErr):
		return "tool_panic"
	case errors.As(err, &resErr):
		return "tool_result"
	}
	return fmt.Sprintf("%T", err)
}

type callIDKey struct{}

// WithCallID returns ctx carrying the tool call id of the model's call (the
// id the model gave it, or the JSON-RPC id of an MCP tools/call): Run
// records it on its span as gen_ai.tool.call.id.
func WithCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

// CallIDFromContext returns the tool call id WithCallID put in ctx.
func CallIDFromContext(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(callIDKey{}).(string)
	return id, ok && id != ""
}
