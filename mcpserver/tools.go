package mcpserver

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
)

// mcpTool renders t in the MCP tools/list form. It is called once per tool, in
// New; the SDK keeps the result and answers every tools/list from it.
//
// TODO: once registry.ProviderSchema("mcp") lands (provider package), decode
// its entries into mcp.Tool here instead, so that the server and
// `toolreg schema --provider mcp` cannot drift.
func mcpTool(t *toolreg.Tool) *mcp.Tool {
	spec := t.Spec()
	ann := &mcp.ToolAnnotations{ReadOnlyHint: !spec.SideEffect}
	tool := &mcp.Tool{
		Name:        spec.Name,
		Description: spec.Description,
		// A json.RawMessage marshals as itself: the schema bytes toolreg
		// rendered, keys in its fixed order, with nothing re-encoded.
		InputSchema: json.RawMessage(spec.ParametersSchema()),
		Annotations: ann,
	}
	if a := spec.Annotations; a != nil {
		ann.Title = a.Title
		tool.Title = a.Title
		ann.DestructiveHint = a.DestructiveHint
		ann.OpenWorldHint = a.OpenWorldHint
		if a.IdempotentHint != nil {
			// The SDK's IdempotentHint is a plain bool (false when unsaid),
			// so an unsaid hint and a false one look alike on the wire.
			ann.IdempotentHint = *a.IdempotentHint
		}
	}
	return tool
}
