package main

import (
	"fmt"

	"go.opentelemetry.io/otel"

	"github.com/beam-agents/toolreg/internal/genai"
)

// traceDestination says where the runner's and the effector's execute_tool
// spans go: the global OpenTelemetry provider, which this example leaves
// unset, so they are not recorded at all. A service that sets a provider with
// an exporter (otel.SetTracerProvider) sees them there, in its own traces.
func traceDestination() string {
	tp := otel.GetTracerProvider()
	if genai.IsNoop(tp) {
		return "not exported: no OpenTelemetry tracer provider is set (otel.SetTracerProvider with an exporter shows execute_tool spans)"
	}
	return fmt.Sprintf("the global OpenTelemetry tracer provider (%T)", tp)
}
