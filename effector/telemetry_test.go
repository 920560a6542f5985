//go:build !toolreg_notelemetry

package effector_test

import (
	"context"
	"encoding/hex"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
)

func attrsOf(kvs []attribute.KeyValue) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

type telemetryRig struct {
	e      *effector.Effector
	exp    *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	calls  *atomic.Int32
}

func newTelemetryRig(t *testing.T, store effector.DedupStore, opts ...effector.Option) telemetryRig {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	var calls atomic.Int32
	opts = append([]effector.Option{effector.WithUnderivedIDs(), effector.WithVerify(effector.VerifyOff, nil),
		effector.WithClock(func() time.Time { return time.UnixMilli(1700000000000) }), effector.WithLogger(quietLogger()),
		effector.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))),
		effector.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))}, opts...)
	e, err := effector.New(httpPostTable(t, &calls), store, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return telemetryRig{e: e, exp: exp, reader: reader, calls: &calls}
}

func spansByName(spans tracetest.SpanStubs) map[string]tracetest.SpanStub {
	m := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		m[s.Name] = s
	}
	return m
}

func TestProcessJoinsTheTraceTheIntentCarries(t *testing.T) {
	rig := newTelemetryRig(t, effector.NewMemoryStore())
	in := readFixture(t, "tool_intent_traced.bin")
	if _, err := rig.e.Process(testCtx(t), in); err != nil {
		t.Fatal(err)
	}
	spans := spansByName(rig.exp.GetSpans())
	root, ok := spans["execute_tool http.post"]
	if !ok {
		t.Fatalf("no execute_tool span among %v", spans)
	}
	if got := root.SpanContext.TraceID().String(); got != "0123456789abcdef0123456789abcdef" {
		t.Errorf("trace id %s, want the intent's trace_id", got)
	}
	if !root.Parent.IsRemote() || root.Parent.SpanID() != effector.IntentSpanID(in.ID) {
		t.Errorf("parent %v, want the remote span derived from the intent id", root.Parent)
	}
	a := attrsOf(root.Attributes)
	for k, v := range map[attribute.Key]string{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "http.post", "gen_ai.tool.description": "POST a body.",
		"toolreg.intent.id": in.ID, "gen_ai.tool.type": "function", "toolreg.status": "ok",
	} {
		if a[k] != v {
			t.Errorf("%s = %q, want %q", k, a[k], v)
		}
	}
	if id, ok := a["gen_ai.tool.call.id"]; ok {
		t.Errorf("gen_ai.tool.call.id = %q for an intent that carries no tool call id", id)
	}
	if _, ok := a["gen_ai.tool.call.arguments"]; ok {
		t.Error("arguments recorded without WithRecordArguments")
	}
	for _, name := range []string{"effector.verify", "effector.claim", "effector.execute", "effector.complete"} {
		s, ok := spans[name]
		if !ok {
			t.Errorf("no %s span", name)
			continue
		}
		if s.Parent.SpanID() != root.SpanContext.SpanID() || s.SpanContext.TraceID() != root.SpanContext.TraceID() {
			t.Errorf("%s is not a child of the execute_tool span", name)
		}
	}
	if len(spans) != 5 {
		t.Errorf("got %d spans, want 5", len(spans))
	}
}

func TestProcessWithoutATraceIDIsAChildOfTheCallersSpan(t *testing.T) {
	rig := newTelemetryRig(t, effector.NewMemoryStore(), effector.WithRecordArguments(true))
	in := readFixture(t, "tool_intent.bin")
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(rig.exp))
	ctx, parent := tp.Tracer("consumer").Start(testCtx(t), "deliver")
	if _, err := rig.e.Process(ctx, in); err != nil {
		t.Fatal(err)
	}
	parent.End()
	root := spansByName(rig.exp.GetSpans())["execute_tool http.post"]
	if root.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("parent %v, want the caller's span", root.Parent)
	}
	if got := attrsOf(root.Attributes)["gen_ai.tool.call.arguments"]; got != string(in.ArgsJSON) {
		t.Errorf("arguments %q, want the intent's", got)
	}
}

func TestProcessLinksTheCallersSpanWhenTheIntentCarriesAnotherTrace(t *testing.T) {
	rig := newTelemetryRig(t, effector.NewMemoryStore())
	in := readFixture(t, "tool_intent_traced.bin")
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(rig.exp))
	ctx, parent := tp.Tracer("consumer").Start(testCtx(t), "deliver")
	if _, err := rig.e.Process(ctx, in); err != nil {
		t.Fatal(err)
	}
	parent.End()
	root := spansByName(rig.exp.GetSpans())["execute_tool http.post"]
	if hex.EncodeToString(in.TraceID) != root.SpanContext.TraceID().String() {
		t.Errorf("not in the intent's trace")
	}
	if len(root.Links) != 1 || root.Links[0].SpanContext.SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("links %v, want the caller's span", root.Links)
	}
}

func TestARejectedIntentHasErrorStatusAndIsCounted(t *testing.T) {
	rig := newTelemetryRig(t, effector.NewMemoryStore())
	in := readFixture(t, "tool_intent.bin")
	in.ToolName = "no.such.tool"
	res, err := rig.e.Process(testCtx(t), in)
	if err != nil || res.Status != intent.StatusRejected {
		t.Fatalf("Process = %v, %v; want REJECTED", res.Status, err)
	}
	root := spansByName(rig.exp.GetSpans())["execute_tool no.such.tool"]
	if root.Status.Code != codes.Error || attrsOf(root.Attributes)["error.type"] != "rejected" {
		t.Errorf("status %v, attributes %v; want Error, error.type rejected", root.Status, root.Attributes)
	}
	m := collect(t, rig.reader)
	if got := counter(m, effector.MetricRejections, attribute.String("toolreg.reason", "rejected")); got != 1 {
		t.Errorf("rejections = %d, want 1", got)
	}
}

func TestARefusedIntentIsCountedByReason(t *testing.T) {
	rig := newTelemetryRig(t, effector.NewMemoryStore())
	in := readFixture(t, "tool_intent.bin")
	in.ID = ""
	if _, err := rig.e.Process(testCtx(t), in); err == nil {
		t.Fatal("an intent without an id was not refused")
	}
	m := collect(t, rig.reader)
	if got := counter(m, effector.MetricRejections, attribute.String("toolreg.reason", "malformed_intent")); got != 1 {
		t.Errorf("rejections by malformed_intent = %d, want 1", got)
	}
	if got := counter(m, effector.MetricExecutions, attribute.String("toolreg.status", "refused")); got != 1 {
		t.Errorf("refused executions = %d, want 1", got)
	}
	verify := spansByName(rig.exp.GetSpans())["effector.verify"]
	if verify.Status.Code != codes.Error {
		t.Errorf("verify span status %v, want Error", verify.Status)
	}
}

func TestMetricsCountExecutionsDurationsAndInFlight(t *testing.T) {
	rig := newTelemetryRig(t, effector.NewMemoryStore())
	in := readFixture(t, "tool_intent.bin")
	for range 2 { // the second is answered from the store
		if _, err := rig.e.Process(testCtx(t), in); err != nil {
			t.Fatal(err)
		}
	}
	m := collect(t, rig.reader)
	if got := counter(m, effector.MetricExecutions, attribute.String("toolreg.status", "ok")); got != 2 {
		t.Errorf("ok executions = %d, want 2", got)
	}
	if got := histogramCount(m, effector.MetricDuration); got != 1 {
		t.Errorf("duration samples = %d, want 1 (one function run)", got)
	}
	if got := counter(m, effector.MetricInFlight); got != 0 {
		t.Errorf("in flight after the run = %d, want 0", got)
	}
	if _, ok := find(m, effector.MetricInFlight); !ok {
		t.Error("no in-flight metric")
	}
}

func TestMetricsCountReclaimsAndClaimWaits(t *testing.T) {
	store := effector.NewMemoryStore()
	rig := newTelemetryRig(t, store)
	in := readFixture(t, "tool_intent.bin")
	// Another worker claimed it and crashed: its lease runs out.
	if _, err := store.Claim(testCtx(t), in.ID, effector.CallOf(in), 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := rig.e.Process(testCtx(t), in); err != nil {
		t.Fatal(err)
	}
	m := collect(t, rig.reader)
	if got := counter(m, effector.MetricReclaims, attribute.String("gen_ai.tool.name", "http.post")); got != 1 {
		t.Errorf("reclaims = %d, want 1", got)
	}
	if got := counter(m, effector.MetricClaimWaits); got < 1 {
		t.Errorf("claim waits = %d, want at least 1", got)
	}
}

func collect(t *testing.T, r *sdkmetric.ManualReader) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

func find(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// counter sums the data points of a sum metric that have every attribute of want.
func counter(rm metricdata.ResourceMetrics, name string, want ...attribute.KeyValue) int64 {
	m, ok := find(rm, name)
	if !ok {
		return -1
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		return -2
	}
	var n int64
points:
	for _, dp := range sum.DataPoints {
		for _, kv := range want {
			if v, ok := dp.Attributes.Value(kv.Key); !ok || v != kv.Value {
				continue points
			}
		}
		n += dp.Value
	}
	return n
}

func histogramCount(rm metricdata.ResourceMetrics, name string) uint64 {
	m, ok := find(rm, name)
	if !ok {
		return 0
	}
	var n uint64
	for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
		n += dp.Count
	}
	return n
}
