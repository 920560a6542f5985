// Package genai holds the OpenTelemetry GenAI semantic-convention names that
// runner and effector share, so their execute_tool spans and metrics agree.
package genai

import (
	"reflect"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Instrumentation scope of toolreg's tracers and meters.
const Scope = "github.com/beam-agents/toolreg"

// Attribute keys of the GenAI semantic conventions (execute_tool spans).
const (
	OperationName = attribute.Key("gen_ai.operation.name")
	ToolName      = attribute.Key("gen_ai.tool.name")
	ToolCallID    = attribute.Key("gen_ai.tool.call.id")
	ToolType      = attribute.Key("gen_ai.tool.type")
	ErrorType     = attribute.Key("error.type")
	// ToolArguments is recorded only when an option turns it on.
	ToolArguments = attribute.Key("gen_ai.tool.call.arguments")
)

// ExecuteTool is the gen_ai.operation.name of a tool execution, and the
// first word of its span name.
const ExecuteTool = "execute_tool"

// Operation is the gen_ai.operation.name attribute of a tool execution.
var Operation = OperationName.String(ExecuteTool)

// SpanName is the span name of a tool execution: "execute_tool {tool}".
func SpanName(tool string) string { return ExecuteTool + " " + tool }

// Tracer returns tp's tracer for toolreg, or nil when tp records nothing: a
// no-op provider, or the global one before a service sets a provider. A nil
// tracer lets callers skip the span, its context and its attributes, so
// telemetry nobody collects costs nothing on the hot path.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil || IsNoop(tp) {
		return nil
	}
	return tp.Tracer(Scope)
}

// IsNoop reports whether tp is a no-op provider, or the global default that
// only delegates once a provider is set (otel.GetTracerProvider returns the
// set provider from then on, so it is asked again on every call).
func IsNoop(tp any) bool {
	switch tp.(type) {
	case tracenoop.TracerProvider, *tracenoop.TracerProvider, metricnoop.MeterProvider, *metricnoop.MeterProvider:
		return true
	}
	t := reflect.TypeOf(tp)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == "go.opentelemetry.io/otel/internal/global"
}

type tracerCache struct {
	tp trace.TracerProvider
	tr trace.Tracer
}

var globalTracer atomic.Pointer[tracerCache]

// GlobalTracer is Tracer(otel.GetTracerProvider()), cached while the global
// provider stays the same.
func GlobalTracer() trace.Tracer {
	tp := otel.GetTracerProvider()
	comparable := reflect.TypeOf(tp).Comparable()
	if c := globalTracer.Load(); c != nil && comparable && c.tp == tp {
		return c.tr
	}
	c := &tracerCache{tp: tp, tr: Tracer(tp)}
	if comparable {
		globalTracer.Store(c)
	}
	return c.tr
}
