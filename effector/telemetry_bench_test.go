package effector_test

import (
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/beam-agents/toolreg/effector"
)

// BenchmarkProcessTelemetry measures what telemetry costs Process on the
// path of BenchmarkProcess/path=process: otel=global is the default (no
// provider set: nothing is recorded), otel=noop passes the OpenTelemetry
// no-op providers, otel=sdk records every span and metric into the SDK's
// in-memory exporter and a manual reader. The target (issue 21) is noop
// within 2% of the same path before telemetry: run the same benchmark at
// the commit before it alongside, as
//
//	go test -run '^$' -bench 'ProcessTelemetry|Process/path=process$' -count 3 ./effector
func BenchmarkProcessTelemetry(b *testing.B) {
	tl := benchTools(b)
	for _, c := range []struct {
		name string
		opts []effector.Option
	}{
		{"otel=global", nil},
		{"otel=noop", []effector.Option{effector.WithTracerProvider(tracenoop.NewTracerProvider()), effector.WithMeterProvider(metricnoop.NewMeterProvider())}},
		{"otel=sdk", []effector.Option{
			effector.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))),
			effector.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))}},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := newEffector(b, tl, effector.NewMemoryStore(), append(c.opts, effector.WithResultTTL(time.Millisecond))...)
			processRing(b, e, benchIntents(benchRing))
		})
	}
}
