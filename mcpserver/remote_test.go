package mcpserver_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/internal/toolbind"
	"github.com/beam-agents/toolreg/mcpserver"
)

// A server that serves remote tools (pinned from another MCP server, package
// remote) hides from tools/list those withdrawn at run time, and answers a
// call of one with the tool's model message; nothing is sent on.
func TestAWithdrawnRemoteToolIsHiddenAndRefused(t *testing.T) {
	t.Parallel()
	spec := func(name string, effect bool) *toolreg.Spec {
		return &toolreg.Spec{Name: name, Description: "A pinned tool.", SideEffect: effect,
			Remote: &toolreg.Remote{Server: "up", Tool: name},
			Params: []*toolreg.Param{{Name: "q", Schema: toolreg.Schema{Type: toolreg.TypeString}}}}
	}
	b := bindings.New([]*toolreg.Spec{spec("read", false), spec("write", true)})
	var sent int
	gates := map[string]*toolbind.Gate{"read": {}, "write": {}}
	for name, g := range gates {
		toolbind.BindRemote(b, &toolbind.Remote{Name: name, Effect: name == "write", Gate: g,
			Call: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				sent++
				return json.RawMessage(`{}`), nil
			}})
	}
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	eff, err := effector.New(bound.Effector, effector.NewMemoryStore(), effector.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{bound: bound}
	if f.srv, err = mcpserver.New(bound, eff); err != nil {
		t.Fatal(err)
	}
	cs := f.client(t)
	names := func() []string {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := strings.Join(names(), " "); got != "read write" {
		t.Fatalf("tools/list = %s", got)
	}
	gates["read"].Withdraw("description: pinned a, served b")
	gates["write"].Suspend("server up cannot be reached")
	if got := names(); len(got) != 0 {
		t.Errorf("tools/list after the withdrawals = %v", got)
	}
	for name, want := range map[string]string{"read": "no longer available", "write": "unavailable right now"} {
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"q": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		if !r.IsError || !strings.Contains(text(t, r), want) {
			t.Errorf("call of %s = %+v, want an isError result saying %q", name, r, want)
		}
	}
	if sent != 0 {
		t.Errorf("%d calls were sent on", sent)
	}
}
