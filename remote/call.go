package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/effector"
)

// MetaIdempotencyKey is the _meta key a side-effecting remote tool's call
// carries the intent id under: a server that deduplicates on it never runs a
// retried effect twice. It is the key toolreg's own MCP server
// (mcpserver.MetaIdempotencyKey) reads, so a toolreg service pinning another
// one's tools gets execute-once end to end.
const MetaIdempotencyKey = "toolreg/idempotency-key"

// MetaReclaimed is the _meta key set to true on a call the effector runs again
// after an earlier attempt stopped without a result (effector.IntentInfo's
// Reclaimed): the earlier one may have applied the effect.
const MetaReclaimed = "toolreg/reclaimed"

// CallError is a call of a remote tool that got no answer: not sent at all
// (Sent false: the server is not connected, or the call was refused before
// sending), or sent and unanswered (the server died, the connection broke,
// the call timed out or was cancelled).
type CallError struct {
	Server string // the server's name in the configuration
	Tool   string // the tool's name on the server
	Sent   bool
	Effect bool // the tool is side-effecting
	Err    error
}

func (e *CallError) Error() string {
	switch {
	case !e.Sent:
		return fmt.Sprintf("remote: tool %q of server %q was not called: %v; nothing was sent", e.Tool, e.Server, e.Err)
	case e.Effect:
		return fmt.Sprintf("remote: effect unknown: tool %q of server %q was called and no answer came (%v), so it may have run; its idempotency key (_meta %q) is the intent id, so a server that honours it does not run it twice", e.Tool, e.Server, e.Err, MetaIdempotencyKey)
	}
	return fmt.Sprintf("remote: tool %q of server %q was called and no answer came: %v", e.Tool, e.Server, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// ToolError is a server's answer that the call failed: a result with isError
// set, or a JSON-RPC error (an unknown tool, invalid params). The server
// answered, so nothing about the call is unknown.
type ToolError struct {
	Server  string
	Tool    string
	Code    int64  // the JSON-RPC error code; 0 for an isError result
	Message string // the server's text, cut to 1 KiB
}

func (e *ToolError) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("remote: server %q refused the call of tool %q (JSON-RPC error %d): %s", e.Server, e.Tool, e.Code, e.Message)
	}
	return fmt.Sprintf("remote: server %q answered that tool %q failed: %s", e.Server, e.Tool, e.Message)
}

var errEffectOutsideEffector = errors.New("a side-effecting remote tool is called only by the effector, with the intent it executes on its context (effector.IntentFrom): stage it with Act")

// call is the bound function of a remote tool: args are valid and
// normalized against the manifest (the binder decoded them). It sends them,
// with the intent id as the idempotency key for a side-effecting tool, and
// returns the result: the structured content when the manifest pins returns
// (checked against it by the runner or the effector), else the content
// blocks, as JSON.
func (p *pinned) call(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	if reason, tmp, out := p.gate.Withdrawn(); out {
		return nil, &toolreg.ToolWithdrawnError{Name: p.spec.Name, Reason: reason, Temporary: tmp}
	}
	r := p.spec.Remote
	fail := func(sent bool, err error) error {
		return &CallError{Server: r.Server, Tool: r.Tool, Sent: sent, Effect: p.spec.SideEffect, Err: err}
	}
	params := &mcp.CallToolParams{Name: r.Tool, Arguments: args}
	if p.spec.SideEffect {
		info, ok := effector.IntentFrom(ctx)
		if !ok {
			return nil, fail(false, errEffectOutsideEffector)
		}
		params.Meta = mcp.Meta{MetaIdempotencyKey: info.ID}
		if info.Reclaimed {
			params.Meta[MetaReclaimed] = true
		}
	}
	sess, gen := p.srv.session()
	if sess == nil {
		return nil, fail(false, fmt.Errorf("server %q is not connected", r.Server))
	}
	if err := ctx.Err(); err != nil {
		return nil, fail(false, err)
	}
	timeout := p.srv.set.opts.callTimeout
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Close ends the calls in flight: the SDK's session close waits for them.
	defer context.AfterFunc(p.srv.set.ctx, cancel)()
	res, err := sess.CallTool(cctx, params)
	if err != nil {
		var werr *jsonrpc.Error
		switch {
		case p.srv.tooLarge.Load():
			return nil, fail(true, &MessageTooLargeError{Server: r.Server, Limit: p.srv.set.opts.maxMessage})
		case p.srv.set.ctx.Err() != nil && ctx.Err() == nil && cctx.Err() == context.Canceled:
			return nil, fail(true, errors.New("the remote servers were closed (Set.Close) during the call"))
		case errors.As(err, &werr) && !rejectedByTransport(werr):
			return nil, &ToolError{Server: r.Server, Tool: r.Tool, Code: werr.Code, Message: cut(werr.Message, 1024)}
		case ctx.Err() == nil && cctx.Err() == context.DeadlineExceeded:
			return nil, fail(true, fmt.Errorf("no answer within %v (remote.WithCallTimeout): %w", timeout, context.DeadlineExceeded))
		case ctx.Err() != nil:
			return nil, fail(true, fmt.Errorf("%w (the call was cancelled on the server)", context.Cause(ctx)))
		case werr != nil:
			var op *net.OpError
			if errors.As(err, &op) && op.Op == "dial" {
				// Nothing could be sent: the server is gone. Its tools are
				// suspended until it is reconnected and checked.
				p.srv.lost(gen)
				return nil, fail(false, err)
			}
			// The HTTP exchange failed (a gateway's 502 or 504, a dropped
			// connection) after the request may have reached the server;
			// the SDK keeps the session, so the tools stay offered.
			return nil, fail(true, err)
		}
		// The connection broke under the call: the server's tools are
		// suspended now, not when the SDK notices, and it is reconnected.
		p.srv.lost(gen)
		return nil, fail(true, err)
	}
	if res.IsError {
		return nil, &ToolError{Server: r.Server, Tool: r.Tool, Message: cut(text(res.Content), 1024)}
	}
	if p.spec.Returns != nil {
		if res.StructuredContent == nil {
			return nil, &toolreg.ToolResultError{Tool: p.spec.Name, Problems: []toolreg.ResultProblem{{
				Want: "structuredContent, as the pinned returns declare", Got: "a result with none"}}}
		}
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("remote: tool %q of server %q: its structured content does not encode: %w", r.Tool, r.Server, err)
		}
		return b, nil
	}
	if res.Content == nil {
		return json.RawMessage("[]"), nil
	}
	b, err := json.Marshal(res.Content)
	if err != nil {
		return nil, fmt.Errorf("remote: tool %q of server %q: its content does not encode: %w", r.Tool, r.Server, err)
	}
	return b, nil
}

// rejectedByTransport reports whether e is the SDK's own error for an HTTP
// exchange that failed (jsonrpc2.ErrRejected: a transient status such as
// 502, 503, 504 or 429, or an error of the HTTP client), not a server's
// answer. The SDK does not export it; it wraps a server's JSON-RPC error
// from a failed status before it, so errors.As finds the server's first.
func rejectedByTransport(e *jsonrpc.Error) bool {
	return e.Code == -32005 && e.Message == "rejected by transport"
}

// text is the text of a result's content blocks, for an error message.
func text(cs []mcp.Content) string {
	var parts []string
	for _, c := range cs {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 {
		return "(no text)"
	}
	return strings.Join(parts, "\n")
}
