//go:build !toolreg_notelemetry

package runner_test

import (
	"context"
	"encoding/json"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/beam-agents/toolreg/runner"
)

var activationTrace = trace.TraceID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}

// TestRunToolJoinsTheActivationsTrace: with WithTraceID, the inline runs of
// an activation (RunTool and RunAll) are spans of the activation's trace,
// as the effector's spans of its intents are: under a remote parent the
// activation names, the same for every run; a caller's span of another
// trace (a retried bundle's) is linked, and a caller's span of the
// activation's own trace stays the parent. Without WithTraceID the
// caller's span is the parent, as before.
func TestRunToolJoinsTheActivationsTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	s := newSupportAgent(t)
	r := runner.New(runner.WithTracerProvider(tp))
	act := func(opts ...runner.ActivationOption) *runner.Activation {
		return runner.NewActivation(s.bound.Pipeline, []byte("customer-42"), 7, append([]runner.ActivationOption{runner.WithRunner(r)}, opts...)...)
	}
	lookup := json.RawMessage(`{"order_id":"o-1"}`)
	only := func(t *testing.T) tracetest.SpanStub {
		t.Helper()
		for _, s := range exp.GetSpans() {
			if s.Name == "execute_tool lookup_order" {
				return s
			}
		}
		t.Fatalf("no execute_tool span among %v", exp.GetSpans().Snapshots())
		return tracetest.SpanStub{}
	}

	t.Run("with no span in the caller's context", func(t *testing.T) {
		exp.Reset()
		a := act(runner.WithTraceID(activationTrace[:]))
		if _, err := a.RunTool(context.Background(), "lookup_order", lookup); err != nil {
			t.Fatal(err)
		}
		first := only(t)
		if first.SpanContext.TraceID() != activationTrace || !first.Parent.IsRemote() || first.Parent.TraceID() != activationTrace {
			t.Fatalf("span in trace %s under parent %v; want the activation's trace %s, under a remote parent", first.SpanContext.TraceID(), first.Parent, activationTrace)
		}
		exp.Reset()
		tool, _ := a.Tool("lookup_order")
		a.RunAll(context.Background(), []runner.Call{{Tool: tool, Args: lookup}})
		if again := only(t); again.SpanContext.TraceID() != activationTrace || again.Parent.SpanID() != first.Parent.SpanID() {
			t.Errorf("RunAll's span in trace %s under %v; want the same trace and parent as RunTool's (%v)", again.SpanContext.TraceID(), again.Parent, first.Parent)
		}
	})

	t.Run("with a span of another trace in the caller's context", func(t *testing.T) {
		exp.Reset()
		ctx, retry := tp.Tracer("pipeline").Start(context.Background(), "retried bundle")
		if _, err := act(runner.WithTraceID(activationTrace[:])).RunTool(ctx, "lookup_order", lookup); err != nil {
			t.Fatal(err)
		}
		retry.End()
		s := only(t)
		if s.SpanContext.TraceID() != activationTrace {
			t.Errorf("span in trace %s, want the activation's %s", s.SpanContext.TraceID(), activationTrace)
		}
		if len(s.Links) != 1 || s.Links[0].SpanContext.SpanID() != retry.SpanContext().SpanID() {
			t.Errorf("links %v, want the caller's span", s.Links)
		}
	})

	t.Run("with a span of the activation's trace in the caller's context", func(t *testing.T) {
		exp.Reset()
		ctx := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: activationTrace, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled, Remote: true}))
		ctx, step := tp.Tracer("pipeline").Start(ctx, "activation")
		if _, err := act(runner.WithTraceID(activationTrace[:])).RunTool(ctx, "lookup_order", lookup); err != nil {
			t.Fatal(err)
		}
		step.End()
		if s := only(t); s.Parent.SpanID() != step.SpanContext().SpanID() || len(s.Links) != 0 {
			t.Errorf("parent %v, links %v; want the caller's span as parent, no link", s.Parent, s.Links)
		}
	})

	t.Run("without WithTraceID", func(t *testing.T) {
		exp.Reset()
		ctx, parent := tp.Tracer("pipeline").Start(context.Background(), "activation")
		if _, err := act().RunTool(ctx, "lookup_order", lookup); err != nil {
			t.Fatal(err)
		}
		parent.End()
		if s := only(t); s.Parent.SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("parent %v, want the caller's span", s.Parent)
		}
	})
}

// TestRunRecordsTheToolsDescriptionAndEachCallsID: the span has the
// manifest's description (gen_ai.tool.description), and RunAll gives each
// call's span its own Call.ID as gen_ai.tool.call.id.
func TestRunRecordsTheToolsDescriptionAndEachCallsID(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	search, _, _ := fixture(t, func(_ context.Context, a SearchArgs) (SearchResult, error) { return SearchResult{Query: a.Query}, nil })
	r := runner.New(runner.WithTracerProvider(tp))
	r.RunAll(context.Background(), []runner.Call{
		{Tool: search, Args: json.RawMessage(`{"query":"a","exact":true,"tags":[]}`), ID: "call_a"},
		{Tool: search, Args: json.RawMessage(`{"query":"b","exact":true,"tags":[]}`), ID: "call_b"},
	})
	ids := map[string]bool{}
	for _, s := range exp.GetSpans() {
		a := spanAttrs(s)
		if a["gen_ai.tool.description"] != "Search the catalogue." {
			t.Errorf("gen_ai.tool.description %q, want the manifest's", a["gen_ai.tool.description"])
		}
		ids[a["gen_ai.tool.call.id"]] = true
	}
	if len(ids) != 2 || !ids["call_a"] || !ids["call_b"] {
		t.Errorf("call ids on the spans %v, want call_a and call_b", ids)
	}
}
