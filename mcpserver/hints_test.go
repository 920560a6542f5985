package mcpserver_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hosts use the hints to decide what to confirm and what to retry: a
// read-only tool is idempotent unless its manifest says otherwise, and
// title and openWorldHint come from the manifest's annotations.
func TestToolsListCarriesTheHintsHostsUse(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res, err := f.client(t).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*mcp.ToolAnnotations{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool.Annotations
	}
	want := map[string]*mcp.ToolAnnotations{
		"greet":  {Title: "Greet", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
		"charge": {Title: "Charge card", DestructiveHint: ptr(true), IdempotentHint: false, OpenWorldHint: ptr(true)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

// The server never sends notifications/tools/list_changed (its tools are
// fixed in New), so it must not tell clients to wait for one.
func TestTheServerDoesNotAdvertiseToolListChanges(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	caps := f.client(t).InitializeResult().Capabilities
	if caps.Tools == nil {
		t.Fatal("the server does not advertise the tools capability")
	}
	if caps.Tools.ListChanged {
		t.Error("the server advertises tools.listChanged, but never sends notifications/tools/list_changed")
	}
	//lint:ignore SA1019 checking that the deprecated capability is not advertised
	if caps.Logging != nil {
		t.Error("the server advertises logging, but never sends log messages")
	}
}
