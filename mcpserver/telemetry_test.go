//go:build !toolreg_notelemetry

package mcpserver_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/mcpserver"
	"github.com/beam-agents/toolreg/runner"
)

func TestToolCallsJoinTheClientsTraceFromMeta(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	f := newFixtureWith(t, []effector.Option{effector.WithTracerProvider(tp)},
		mcpserver.WithRunner(runner.New(runner.WithTracerProvider(tp))))
	cs := f.client(t)
	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		spanID  = "00f067aa0ba902b7"
	)
	meta := mcp.Meta{mcpserver.MetaTraceparent: "00-" + traceID + "-" + spanID + "-01"}
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}, Meta: meta}); err != nil || res.IsError {
		t.Fatalf("greet: %v %v", res, err)
	}
	charged, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "charge", Arguments: map[string]any{"amount": 5}, Meta: meta})
	if err != nil || charged.IsError {
		t.Fatalf("charge: %v %v", text(t, charged), err)
	}
	intentID, _ := charged.Meta[mcpserver.MetaIntentID].(string)
	seen, callIDs := map[string]bool{}, map[string]bool{}
	for _, s := range exp.GetSpans() {
		if s.Name != "execute_tool greet" && s.Name != "execute_tool charge" {
			continue
		}
		seen[s.Name] = true
		if s.SpanContext.TraceID().String() != traceID || s.Parent.SpanID().String() != spanID || !s.Parent.IsRemote() {
			t.Errorf("%s: trace %s parent %s, want the client's %s %s", s.Name, s.SpanContext.TraceID(), s.Parent.SpanID(), traceID, spanID)
		}
		attrs := map[attribute.Key]string{}
		for _, kv := range s.Attributes {
			attrs[kv.Key] = kv.Value.Emit()
		}
		callID := attrs["gen_ai.tool.call.id"]
		if callID == "" {
			t.Errorf("%s has no gen_ai.tool.call.id", s.Name)
		}
		callIDs[callID] = true
		// The effect's call id is its request's, as the inline call's is;
		// its intent id, which the result names, has an attribute of its own.
		if s.Name == "execute_tool charge" && (intentID == "" || callID == intentID || attrs["toolreg.intent.id"] != intentID) {
			t.Errorf("%s: gen_ai.tool.call.id %q, toolreg.intent.id %q; want the request's id and the intent id %q of the result's _meta", s.Name, callID, attrs["toolreg.intent.id"], intentID)
		}
	}
	if !seen["execute_tool greet"] || !seen["execute_tool charge"] {
		t.Errorf("spans seen %v, want both tools'", seen)
	}
	if len(callIDs) != 2 {
		t.Errorf("call ids %v, want each request's own", callIDs)
	}
}
