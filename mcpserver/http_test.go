package mcpserver_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestStreamableHTTPServesTheSameTools(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	hs := httptest.NewServer(f.srv.Handler(nil))
	t.Cleanup(hs.Close)
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 2 || list.Tools[0].Name != "charge" || list.Tools[1].Name != "greet" {
		t.Errorf("tools/list = %v, want charge and greet", list.Tools)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != `{"greeting":"hello Ada"}` {
		t.Errorf("greet = %s", got)
	}
	first := callCharge(t, cs, "http-1", map[string]any{"amount": 10})
	again := callCharge(t, cs, "http-1", map[string]any{"amount": 10})
	if n := f.charges.Load(); n != 1 {
		t.Errorf("charge with one key twice ran %d times, want 1", n)
	}
	if marshal(t, first) != marshal(t, again) {
		t.Errorf("the retry's result %s differs from the first %s", marshal(t, again), marshal(t, first))
	}

	// A POST retried after a lost response repeats its JSON-RPC id within
	// the session: the effect runs once.
	post := func(id string) string {
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"charge","arguments":{"amount":20}}}`
		req, err := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("POST: %s: %s", resp.Status, b)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				return data
			}
			if strings.HasPrefix(sc.Text(), "{") {
				return sc.Text()
			}
		}
		t.Fatalf("POST: no message in the response")
		return ""
	}
	r1 := post(`"retry-me"`)
	r2 := post(`"retry-me"`)
	if n := f.charges.Load(); n != 2 {
		t.Errorf("one POST delivered twice: charge ran %d times in all, want 2", n)
	}
	if r1 != r2 || !strings.Contains(r1, `"charge_id"`) {
		t.Errorf("the two deliveries answered\n%s\n%s\nwant one OK result twice", r1, r2)
	}
	post(`"another"`)
	if n := f.charges.Load(); n != 3 {
		t.Errorf("a POST with a new id: charge ran %d times in all, want 3", n)
	}
}
