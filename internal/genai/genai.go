// Package genai holds the OpenTelemetry GenAI semantic-convention names that
// runner and effector share, so their execute_tool spans and metrics agree.
package genai

import (
	"reflect"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
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
	// ToolDescription is the manifest's description of the tool.
	ToolDescription = attribute.Key("gen_ai.tool.description")
	// ErrorType takes one of the values of errortype.go.
	ErrorType = attribute.Key("error.type")
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
	return isGlobalDelegate(tp)
}

// The global providers' delegates: what otel.GetTracerProvider and
// otel.GetMeterProvider return until a service sets a provider (from then on
// they return the set one). Comparing with them is the cheap per-call test
// for "nothing is collected"; nil if a provider was set before this package
// was initialised, when the cache below answers instead.
var (
	globalDelegateTP = delegate[trace.TracerProvider](otel.GetTracerProvider())
	globalDelegateMP = delegate[metric.MeterProvider](otel.GetMeterProvider())
)

func delegate[P any](p P) (d P) {
	if isGlobalDelegate(p) {
		return p
	}
	return d
}

func isGlobalDelegate(p any) bool {
	t := reflect.TypeOf(p)
	if t == nil {
		return false
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == "go.opentelemetry.io/otel/internal/global"
}

// cached is what was worked out for the provider a global getter last
// returned; it is replaced when the getter returns another one.
type cached[P comparable, V any] struct {
	p P
	v V
}

// lookup returns c's value for p, computing it with f when p is not the
// provider c holds. An uncomparable provider is never cached.
func lookup[P comparable, V any](c *atomic.Pointer[cached[P, V]], p P, f func(P) V) V {
	comparable := reflect.TypeOf(p).Comparable()
	if e := c.Load(); e != nil && comparable && e.p == p {
		return e.v
	}
	v := f(p)
	if comparable {
		c.Store(&cached[P, V]{p: p, v: v})
	}
	return v
}

var (
	globalTracer    atomic.Pointer[cached[trace.TracerProvider, trace.Tracer]]
	globalMeterNoop atomic.Pointer[cached[metric.MeterProvider, bool]]
)

// GlobalTracer is Tracer(otel.GetTracerProvider()): nil, at the cost of one
// comparison, while no service has set a provider, and cached while the
// global provider stays the same. It is asked on every call, not once, so a
// provider a service sets after a Runner or Effector was made is used.
// (OpenTelemetry's eBPF auto-instrumentation, which takes over the global
// delegate's spans without setting a provider, is not seen: set a provider.)
func GlobalTracer() trace.Tracer {
	tp := otel.GetTracerProvider()
	if tp == globalDelegateTP {
		return nil
	}
	return lookup(&globalTracer, tp, Tracer)
}

// GlobalMeterIsNoop reports whether the global meter provider records
// nothing: no service has set one, or it set a no-op one. Like GlobalTracer
// it is cheap and asked on every call.
func GlobalMeterIsNoop() bool {
	mp := otel.GetMeterProvider()
	if mp == globalDelegateMP {
		return true
	}
	return lookup(&globalMeterNoop, mp, func(mp metric.MeterProvider) bool { return IsNoop(mp) })
}
