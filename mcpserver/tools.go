package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/par"
	"github.com/beam-agents/toolreg/provider"
	"github.com/beam-agents/toolreg/registry"
)

// mcpTools returns the tools/list entries of every tool in reg: the
// registry's "mcp" provider form (the one `toolreg schema --provider mcp`
// prints), decoded into the SDK's type, in registration order. It is called
// once, in New; the SDK keeps the result and answers every tools/list from
// it. Each tool is rendered as reg.ProviderSchema renders it, on every core,
// and not through the registry's cache: the server holds the decoded
// entries, and the cache would hold the rendering twice more (each entry,
// and the list of them) for as long as the registry lives.
func mcpTools(reg *registry.Registry) ([]*mcp.Tool, error) {
	specs := make([]*toolreg.Spec, 0, reg.Len())
	for _, t := range reg.Tools() {
		specs = append(specs, t.Spec())
	}
	tools := make([]*mcp.Tool, len(specs))
	errs := make([]error, len(specs))
	var failed atomic.Bool
	par.Do(len(specs), func(i int) {
		r, err := provider.Render(provider.MCP, specs[i])
		if err != nil {
			failed.Store(true)
			return
		}
		tools[i], errs[i] = decodeTool(r.JSON)
	})
	if failed.Load() {
		// RenderAll says which tools the form cannot express, all of them.
		if _, err := provider.RenderAll(provider.MCP, specs); err != nil {
			return nil, fmt.Errorf("mcpserver: rendering tools/list: %w", err)
		}
		return nil, errors.New("mcpserver: rendering tools/list: a tool rendered alone failed, and in the list did not")
	}
	if err := par.First(errs); err != nil {
		return nil, err
	}
	return tools, nil
}

// decodeTool decodes one rendered entry. The input schema stays the
// rendered bytes (a json.RawMessage marshals as itself), so what clients see
// is what the provider form wrote, keys in its order, nothing re-encoded.
func decodeTool(entry json.RawMessage) (*mcp.Tool, error) {
	var e struct {
		Name         string               `json:"name"`
		Title        string               `json:"title"`
		Description  string               `json:"description"`
		InputSchema  json.RawMessage      `json:"inputSchema"`
		OutputSchema json.RawMessage      `json:"outputSchema"`
		Annotations  *mcp.ToolAnnotations `json:"annotations"`
	}
	if err := json.Unmarshal(entry, &e); err != nil {
		return nil, fmt.Errorf("mcpserver: the mcp form of a tool is not a tools/list entry: %w", err)
	}
	t := &mcp.Tool{Name: e.Name, Title: e.Title, Description: e.Description,
		InputSchema: e.InputSchema, Annotations: e.Annotations}
	if e.OutputSchema != nil {
		// Set only when present: a nil json.RawMessage in the interface
		// field would not be a nil OutputSchema.
		t.OutputSchema = e.OutputSchema
	}
	return t, nil
}
