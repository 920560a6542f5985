//go:build !toolreg_notelemetry

package effector_test

import (
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/beam-agents/toolreg/effector"
)

// spansOf returns the spans of exp whose trace holds the execute_tool span
// of intent id, by name: other tests' spans are left out.
func spansOf(exp *tracetest.InMemoryExporter, id string) map[string]tracetest.SpanStub {
	spans := exp.GetSpans()
	var trace string
	for _, s := range spans {
		if attrsOf(s.Attributes)["toolreg.intent.id"] == id {
			trace = s.SpanContext.TraceID().String()
		}
	}
	m := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		if trace != "" && s.SpanContext.TraceID().String() == trace {
			m[s.Name] = s
		}
	}
	return m
}

// The fast path that skips telemetry while nothing collects it must not
// outlive that: an Effector made with the default (global) providers before
// the service sets its own records from then on, and follows the service to
// a provider it sets later still. Not parallel: it sets the global providers.
func TestAnEffectorMadeBeforeTheServiceSetsItsProvidersRecordsIntoThem(t *testing.T) {
	t.Cleanup(func() {
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
		otel.SetMeterProvider(metricnoop.NewMeterProvider())
	})
	var calls atomic.Int32
	e, err := effector.New(httpPostTable(t, &calls), effector.NewMemoryStore(), effector.WithUnderivedIDs(),
		effector.WithVerify(effector.VerifyOff, nil), effector.WithClock(func() time.Time { return t0 }), effector.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	process := func(step uint32) string {
		t.Helper()
		in := intentFor("http.post", `{"url":"https://example.com/a","body":{}}`, step)
		if _, err := e.Process(testCtx(t), in); err != nil {
			t.Fatal(err)
		}
		return in.ID
	}
	process(1) // nothing collects yet

	exp := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	id := process(2)
	spans := spansOf(exp, id)
	for _, name := range []string{"execute_tool http.post", "effector.verify", "effector.claim", "effector.execute", "effector.complete"} {
		if _, ok := spans[name]; !ok {
			t.Errorf("after the service set a provider: no %q span for intent %s; got %v", name, id, spans)
		}
	}
	tool := attribute.String("gen_ai.tool.name", "http.post")
	if got := counter(collect(t, reader), effector.MetricExecutions, tool); got != 1 {
		t.Errorf("executions after the service set a meter provider = %d, want 1 (the one run before it is not counted)", got)
	}

	// A second provider replaces the first: the cached tracer must not pin it.
	exp2 := tracetest.NewInMemoryExporter()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp2)))
	id3 := process(3)
	if _, ok := spansOf(exp2, id3)["execute_tool http.post"]; !ok {
		t.Errorf("intent %s not traced into the provider set second", id3)
	}
	if _, ok := spansOf(exp, id3)["execute_tool http.post"]; ok {
		t.Errorf("intent %s traced into the replaced provider", id3)
	}

	// A no-op provider set last turns tracing off again.
	otel.SetTracerProvider(tracenoop.NewTracerProvider())
	id4 := process(4)
	if s := spansOf(exp2, id4); len(s) != 0 {
		t.Errorf("intent %s traced after a no-op provider was set: %v", id4, s)
	}
}
