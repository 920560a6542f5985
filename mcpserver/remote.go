package mcpserver

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/registry"
)

// hasRemote reports whether reg holds a remote tool (package remote's),
// which its server may have withdrawn at run time.
func hasRemote(reg *registry.Registry) bool {
	for _, t := range reg.Tools() {
		if t.Spec().Remote != nil {
			return true
		}
	}
	return false
}

// hideWithdrawn leaves out of each tools/list the remote tools withdrawn or
// suspended since New (their server drifted from its manifest, or cannot be
// reached now): a client is not shown a tool whose call would be refused.
// Their calls are refused with the tool's model message.
func (s *Server) hideWithdrawn(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		lr, ok := res.(*mcp.ListToolsResult)
		if method != "tools/list" || err != nil || !ok {
			return res, err
		}
		kept := make([]*mcp.Tool, 0, len(lr.Tools))
		for _, t := range lr.Tools {
			if _, err := s.bound.Pipeline.Get(t.Name); errors.As(err, new(*toolreg.ToolWithdrawnError)) {
				continue
			}
			kept = append(kept, t)
		}
		if len(kept) == len(lr.Tools) {
			return res, nil
		}
		out := *lr
		out.Tools = kept
		return &out, nil
	}
}
