package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/beam-agents/toolreg/runner"
)

// Meta keys of W3C trace context a client may put in a tools/call request's
// _meta, as MCP's trace-context convention does: the call's execute_tool
// span (the runner's for a read-only tool, the effector's for a
// side-effecting one) then joins the client's trace.
const (
	MetaTraceparent = "traceparent"
	MetaTracestate  = "tracestate"
)

// metaCarrier reads trace context from a request's _meta.
type metaCarrier mcp.Meta

func (c metaCarrier) Get(key string) string {
	v, _ := c[key].(string)
	return v
}
func (c metaCarrier) Set(string, string) {}
func (c metaCarrier) Keys() []string {
	return []string{MetaTraceparent, MetaTracestate}
}

// joinTrace returns ctx under the trace context the request's _meta carries,
// if any, and with the request's JSON-RPC id as the tool call id that the
// runner records as gen_ai.tool.call.id, and that a side-effecting call's
// intent carries (its tool_call_id) for the effector's span. A span already in ctx (an HTTP
// server's) is kept when the request carries no trace context.
func joinTrace(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if req == nil || req.Params == nil {
		return ctx
	}
	meta := req.Params.Meta
	if _, ok := meta[MetaTraceparent].(string); ok {
		ctx = propagation.TraceContext{}.Extract(ctx, metaCarrier(meta))
	}
	if id, ok := meta[metaRequestID].(string); ok && id != "" {
		ctx = runner.WithCallID(ctx, id)
	}
	return ctx
}
