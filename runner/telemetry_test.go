//go:build !toolreg_notelemetry

package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/beam-agents/toolreg/runner"
)

func spanAttrs(s tracetest.SpanStub) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

func TestRunRecordsAnExecuteToolSpanUnderTheCallersSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	search, _, _ := fixture(t, func(_ context.Context, a SearchArgs) (SearchResult, error) {
		return SearchResult{Query: a.Query}, nil
	})
	r := runner.New(runner.WithTracerProvider(tp))

	ctx, parent := tp.Tracer("test").Start(context.Background(), "agent turn")
	ctx = runner.WithCallID(ctx, "call_42")
	if _, err := r.Run(ctx, search, json.RawMessage(`{"query":"secret-query","exact":false,"tags":[]}`)); err != nil {
		t.Fatal(err)
	}
	parent.End()

	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want the tool's and its parent's", len(spans))
	}
	s := spans[0]
	if s.Name != "execute_tool search" {
		t.Errorf("span name %q, want %q", s.Name, "execute_tool search")
	}
	if s.Parent.SpanID() != parent.SpanContext().SpanID() || s.SpanContext.TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("the tool's span is not a child of the caller's span")
	}
	a := spanAttrs(s)
	want := map[attribute.Key]string{
		"gen_ai.operation.name": "execute_tool",
		"gen_ai.tool.name":      "search",
		"gen_ai.tool.type":      "function",
		"gen_ai.tool.call.id":   "call_42",
	}
	for k, v := range want {
		if a[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, a[k], v)
		}
	}
	if _, ok := a["gen_ai.tool.call.arguments"]; ok {
		t.Errorf("arguments recorded without WithRecordArguments: %v", a)
	}
	if s.Status.Code == codes.Error {
		t.Errorf("a successful run has error status")
	}
}

func TestRunRecordsArgumentsOnlyWhenAsked(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	search, _, _ := fixture(t, func(_ context.Context, a SearchArgs) (SearchResult, error) { return SearchResult{}, nil })
	r := runner.New(runner.WithTracerProvider(tp), runner.WithRecordArguments(true))
	if _, err := r.Run(context.Background(), search, json.RawMessage(`{"query":"q1","exact":false,"tags":[]}`)); err != nil {
		t.Fatal(err)
	}
	if got := spanAttrs(exp.GetSpans()[0])["gen_ai.tool.call.arguments"]; got != `{"query":"q1","exact":false,"tags":[]}` {
		t.Errorf("arguments attribute %q", got)
	}
}

func TestRunFailureSetsErrorStatusAndType(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	boom := errors.New("backend down")
	search, refund, _ := fixture(t, func(_ context.Context, a SearchArgs) (SearchResult, error) { return SearchResult{}, boom })
	r := runner.New(runner.WithTracerProvider(tp))
	for _, c := range []struct {
		name, args, errType string
		tool                *runner.Call
	}{
		{"function error", `{"query":"q","exact":true,"tags":[]}`, "tool_error", &runner.Call{Tool: search}},
		{"bad arguments", `{"query":""}`, "argument_refused", &runner.Call{Tool: search}},
		{"side effect", `{"order_id":"o"}`, "side_effect_refused", &runner.Call{Tool: refund}},
	} {
		exp.Reset()
		if _, err := r.Run(context.Background(), c.tool.Tool, json.RawMessage(c.args)); err == nil {
			t.Fatalf("%s: no error", c.name)
		}
		s := exp.GetSpans()[0]
		if s.Status.Code != codes.Error {
			t.Errorf("%s: status %v, want Error", c.name, s.Status)
		}
		if got := spanAttrs(s)["error.type"]; got != c.errType {
			t.Errorf("%s: error.type %q, want %q", c.name, got, c.errType)
		}
	}
}

func TestRunAllRecordsOneSpanPerCall(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	search, _, _ := fixture(t, func(_ context.Context, a SearchArgs) (SearchResult, error) { return SearchResult{}, nil })
	r := runner.New(runner.WithTracerProvider(tp))
	calls := []runner.Call{{Tool: search, Args: json.RawMessage(`{"query":"a","exact":true,"tags":[]}`)}, {Tool: search, Args: json.RawMessage(`{"query":"b","exact":true,"tags":[]}`)}}
	r.RunAll(context.Background(), calls)
	if n := len(exp.GetSpans()); n != 2 {
		t.Errorf("got %d spans for 2 calls", n)
	}
}

func TestRunUsesTheGlobalProviderByDefault(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	search, _, _ := fixture(t, func(_ context.Context, a SearchArgs) (SearchResult, error) { return SearchResult{}, nil })
	r := runner.New() // made before the service sets its provider
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	t.Cleanup(func() { otel.SetTracerProvider(tracenoop.NewTracerProvider()) })
	if _, err := r.Run(context.Background(), search, json.RawMessage(`{"query":"a","exact":true,"tags":[]}`)); err != nil {
		t.Fatal(err)
	}
	if spans := exp.GetSpans(); len(spans) != 1 || spans[0].Name != "execute_tool search" {
		t.Errorf("global provider got %v", spans.Snapshots())
	}
}

// TestRunResultViolationHasItsOwnErrorType: a result that breaks the
// manifest's returns is a toolreg error kind like the others, so a dashboard
// grouping by error.type sees "result_refused", not a Go type name.
func TestRunResultViolationHasItsOwnErrorType(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tool := quoteTool(t, func(_ context.Context, a quoteArgs) (quote, error) {
		return quote{SKU: a.SKU, PriceCents: -5, Currency: "GBP"}, nil
	})
	if _, err := runner.New(runner.WithTracerProvider(tp)).Run(context.Background(), tool, json.RawMessage(`{"sku":"A1"}`)); err == nil {
		t.Fatal("an off-contract result was handed on")
	}
	s := exp.GetSpans()[0]
	if s.Status.Code != codes.Error {
		t.Errorf("status %v, want Error", s.Status)
	}
	if got := spanAttrs(s)["error.type"]; got != "result_refused" {
		t.Errorf("error.type %q, want %q", got, "result_refused")
	}
}
