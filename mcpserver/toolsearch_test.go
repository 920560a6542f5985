package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/mcpserver"
	"github.com/beam-agents/toolreg/provider"
	"github.com/beam-agents/toolreg/toolsearch"
)

// searchFixture is the fixture's two tools (greet, charge) plus search_tools,
// served with WithToolSearch(initial...).
func searchFixture(t testing.TB, initial ...string) (*mcpserver.Server, *atomic.Int64) {
	t.Helper()
	return searchFixtureBound(t, provider.MCP, mcpserver.WithToolSearch(initial...))
}

// searchFixtureBound is searchFixture with search_tools bound in form,
// served with opts.
func searchFixtureBound(t testing.TB, form string, opts ...mcpserver.Option) (*mcpserver.Server, *atomic.Int64) {
	t.Helper()
	specs, err := loader.LoadFS(fstest.MapFS{"tools.yaml": {Data: []byte(manifests)}}, "tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var charges atomic.Int64
	b := bindings.New(append(specs, toolsearch.Spec()))
	bindings.ReadOnly(b, "greet", func(ctx context.Context, a greetArgs) (map[string]string, error) {
		return map[string]string{"greeting": "hello " + a.Name}, nil
	})
	bindings.Effect(b, "charge", func(ctx context.Context, a chargeArgs) (map[string]any, error) {
		charges.Add(1)
		return map[string]any{"charge_id": "ch_1", "amount": a.Amount}, nil
	})
	if err := toolsearch.Bind(b, form); err != nil {
		t.Fatal(err)
	}
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	eff, err := effector.New(bound.Effector, effector.NewMemoryStore())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(bound, eff, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return srv, &charges
}

// searchClient connects a real MCP SDK client to srv over in-memory
// transports; changed receives each notifications/tools/list_changed.
func searchClient(t testing.TB, srv *mcpserver.Server) (cs *mcp.ClientSession, changed chan struct{}) {
	t.Helper()
	ctx := context.Background()
	changed = make(chan struct{}, 16)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err = c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs, changed
}

func listNames(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// A session starts with search_tools and the initial tools; a call of another
// tool is refused with the model-facing message and never runs; a search that
// finds it adds it to this session's set, the client is sent
// notifications/tools/list_changed, lists it, and calls it.
func TestToolSearchGrowsTheSessionsSetAndNotifiesItsClient(t *testing.T) {
	t.Parallel()
	srv, charges := searchFixture(t, "greet")
	cs, changed := searchClient(t, srv)
	ctx := context.Background()

	if caps := cs.InitializeResult().Capabilities; caps.Tools == nil || !caps.Tools.ListChanged {
		t.Errorf("capabilities %+v: want tools.listChanged with WithToolSearch", caps.Tools)
	}
	if got, want := listNames(t, cs), []string{"greet", "search_tools"}; !slices.Equal(got, want) {
		t.Fatalf("tools/list = %v, want %v", got, want)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "charge", Arguments: map[string]any{"amount": 5}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(resultText(res), `Tool "charge" is not available`) || !strings.Contains(resultText(res), "search_tools") {
		t.Errorf("charge before the search = %+v %q, want the not-offered refusal", res, resultText(res))
	}
	if n := charges.Load(); n != 0 {
		t.Fatalf("charge ran %d times though it was not offered", n)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "charge a card", "limit": 1}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools = %+v %q, %v", res, resultText(res), err)
	}
	var found struct{ Tools []mcp.Tool }
	if err := json.Unmarshal([]byte(resultText(res)), &found); err != nil || len(found.Tools) != 1 || found.Tools[0].Name != "charge" || found.Tools[0].InputSchema == nil {
		t.Fatalf("search_tools answered %s (%v), want charge in MCP's tools/list form", resultText(res), err)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the search found charge")
	}
	if got, want := listNames(t, cs), []string{"charge", "greet", "search_tools"}; !slices.Equal(got, want) {
		t.Fatalf("tools/list after the search = %v, want %v", got, want)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "charge", Arguments: map[string]any{"amount": 5}})
	if err != nil || res.IsError {
		t.Fatalf("charge after the search = %+v %q, %v", res, resultText(res), err)
	}
	if n := charges.Load(); n != 1 {
		t.Errorf("charge ran %d times, want 1", n)
	}

	// Searching again for what the session already has changes nothing and
	// sends nothing.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "charge a card"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
		t.Error("tools/list_changed sent though the set did not grow")
	case <-time.After(200 * time.Millisecond):
	}
}

// search_tools bound in another provider's form (OpenAI's, say, for a
// service that also runs a chat loop) answers over MCP in MCP's: before, an
// MCP client got {"type":"function","function":{...}} entries, which it
// cannot read as tools. So with a tool set per session, and without, where
// every tool is listed and search_tools is one of them.
func TestToolSearchAnswersInMCPsFormHoweverItWasBound(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string][]mcpserver.Option{
		"with WithToolSearch": {mcpserver.WithToolSearch("greet")},
		"without":             nil,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, _ := searchFixtureBound(t, provider.OpenAI, opts...)
			cs, _ := searchClient(t, srv)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "charge a card", "limit": 1}})
			if err != nil || res.IsError {
				t.Fatalf("search_tools = %+v %q, %v", res, resultText(res), err)
			}
			var found struct{ Tools []mcp.Tool }
			if err := json.Unmarshal([]byte(resultText(res)), &found); err != nil || len(found.Tools) != 1 || found.Tools[0].Name != "charge" || found.Tools[0].InputSchema == nil {
				t.Fatalf("search_tools answered %s (%v), want charge in MCP's tools/list form", resultText(res), err)
			}
		})
	}
}

// One session's search does not grow another's set.
func TestToolSearchSetsArePerSession(t *testing.T) {
	t.Parallel()
	srv, charges := searchFixture(t)
	a, changedA := searchClient(t, srv)
	b, _ := searchClient(t, srv)
	ctx := context.Background()
	if _, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "charge card"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changedA:
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/list_changed for the session that searched")
	}
	if got := listNames(t, b); !slices.Equal(got, []string{"search_tools"}) {
		t.Errorf("the other session lists %v, want only search_tools", got)
	}
	res, err := b.CallTool(ctx, &mcp.CallToolParams{Name: "charge", Arguments: map[string]any{"amount": 5}})
	if err != nil || !res.IsError {
		t.Errorf("charge in the other session = %+v, %v; want a refusal", res, err)
	}
	if n := charges.Load(); n != 0 {
		t.Errorf("charge ran %d times", n)
	}
}

// A tool that does not exist at all gets the same refusal, naming no other
// tool.
func TestToolSearchRefusesUnknownToolsTheSameWay(t *testing.T) {
	t.Parallel()
	srv, _ := searchFixture(t, "greet")
	cs, _ := searchClient(t, srv)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "chrage", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), `Tool "chrage" is not available`) || strings.Contains(resultText(res), `"charge"`) {
		t.Errorf("chrage = %+v %q, %v", res, resultText(res), err)
	}
}

// Over streamable HTTP each session has its own set too.
func TestToolSearchOverStreamableHTTP(t *testing.T) {
	t.Parallel()
	srv, _ := searchFixture(t, "greet")
	hs := httptest.NewServer(srv.Handler(nil))
	t.Cleanup(hs.Close)
	ctx := context.Background()
	changed := make(chan struct{}, 4)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := listNames(t, cs); !slices.Equal(got, []string{"greet", "search_tools"}) {
		t.Fatalf("tools/list = %v", got)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "charge a card"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/list_changed over HTTP")
	}
	if got := listNames(t, cs); !slices.Contains(got, "charge") {
		t.Errorf("tools/list after the search = %v, want charge", got)
	}
}

func TestWithToolSearchRefusesABadSetup(t *testing.T) {
	t.Parallel()
	f := newFixture(t) // no search_tools bound
	eff, err := effector.New(f.bound.Effector, effector.NewMemoryStore())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mcpserver.New(f.bound, eff, mcpserver.WithToolSearch()); err == nil || !strings.Contains(err.Error(), "toolsearch.Spec()") {
		t.Errorf("New without search_tools = %v, want an error saying how to bind it", err)
	}

	specs, err := loader.LoadFS(fstest.MapFS{"tools.yaml": {Data: []byte(manifests)}}, "tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := bindings.New(append(specs, toolsearch.Spec()))
	bindings.ReadOnly(b, "greet", func(ctx context.Context, a greetArgs) (string, error) { return "", nil })
	bindings.Effect(b, "charge", func(ctx context.Context, a chargeArgs) (string, error) { return "", nil })
	if err := toolsearch.Bind(b, provider.MCP); err != nil {
		t.Fatal(err)
	}
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	eff, _ = effector.New(bound.Effector, effector.NewMemoryStore())
	_, err = mcpserver.New(bound, eff, mcpserver.WithToolSearch("greet", "gret"))
	if err == nil || !strings.Contains(err.Error(), `"gret"`) {
		t.Errorf("New with an unknown initial tool = %v, want an error naming it", err)
	}
}
