package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/syncbuf"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/remote"
)

// shop is an MCP server made with the MCP Go SDK, in this process: an order
// desk's tools, with raw JSON schemas, so tests can serve exactly what they
// need (and change it, as a server that drifts would).
type shop struct {
	srv *mcp.Server

	mu       sync.Mutex
	calls    []call
	sessions []*mcp.ServerSession
	refunds  map[string]string // idempotency key -> refund id
	nRefunds int
}

type call struct {
	Name string
	Args string
	Meta mcp.Meta
}

const (
	lookupIn  = `{"type":"object","properties":{"order_id":{"type":"string","description":"The order's id.","pattern":"^ord_[0-9]+$"},"verbose":{"type":"boolean","default":false}},"required":["order_id"],"additionalProperties":false}`
	lookupOut = `{"type":"object","properties":{"status":{"type":"string","enum":["paid","refunded"]},"amount":{"type":"number","minimum":0}},"required":["status","amount"],"additionalProperties":false}`
	refundIn  = `{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number","exclusiveMinimum":0,"maximum":500}},"required":["order_id","amount"],"additionalProperties":false}`
	refundOut = `{"type":"object","properties":{"refund_id":{"type":"string"}},"required":["refund_id"],"additionalProperties":false}`
	pingIn    = `{"type":"object","properties":{},"additionalProperties":false}`
)

func newShop(t testing.TB) *shop {
	s := newShopServer()
	t.Cleanup(func() { s.closeSessions() })
	return s
}

func newShopServer() *shop {
	s := &shop{refunds: map[string]string{}}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	s.add(&mcp.Tool{Name: "lookup_order", Title: "Look up an order", Description: "Look up an order by its id.",
		InputSchema: json.RawMessage(lookupIn), OutputSchema: json.RawMessage(lookupOut),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return structured(map[string]any{"status": "paid", "amount": 42.5}), nil
		})
	s.add(&mcp.Tool{Name: "refund_order", Description: "Refund all or part of a paid order.",
		InputSchema: json.RawMessage(refundIn), OutputSchema: json.RawMessage(refundOut),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			key, _ := req.Params.Meta["toolreg/idempotency-key"].(string)
			if id, ok := s.refunds[key]; ok && key != "" {
				return structured(map[string]any{"refund_id": id}), nil
			}
			s.nRefunds++
			id := fmt.Sprintf("re_%d", s.nRefunds)
			if key != "" {
				s.refunds[key] = id
			}
			return structured(map[string]any{"refund_id": id}), nil
		})
	s.add(&mcp.Tool{Name: "ping", Description: "Answer pong.", InputSchema: json.RawMessage(pingIn)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil
		})
	return s
}

func ptr[T any](v T) *T { return &v }

func structured(v map[string]any) *mcp.CallToolResult {
	b, _ := json.Marshal(v)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: v}
}

// add serves t with h, recording each call; a tool of t's name is replaced
// (and connected clients told, with tools/list_changed).
func (s *shop) add(t *mcp.Tool, h mcp.ToolHandler) {
	s.srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.mu.Lock()
		s.calls = append(s.calls, call{Name: req.Params.Name, Args: string(req.Params.Arguments), Meta: req.Params.Meta})
		s.mu.Unlock()
		return h(ctx, req)
	})
}

func (s *shop) callsTo(name string) []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []call
	for _, c := range s.calls {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// server is the shop as a remote.Server in this process: each connection a
// new pair of in-memory transports.
func (s *shop) server() remote.Server {
	return remote.Server{Transport: func() (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := s.srv.Connect(context.Background(), st, nil)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.sessions = append(s.sessions, ss)
		s.mu.Unlock()
		return ct, nil
	}}
}

// httpServer serves the shop over streamable HTTP.
func (s *shop) httpServer(t testing.TB) remote.Server {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return remote.Server{URL: ts.URL}
}

// closeSessions ends every connection from the server's side, as a server
// that dies would.
func (s *shop) closeSessions() {
	s.mu.Lock()
	ss := s.sessions
	s.sessions = nil
	s.mu.Unlock()
	for _, x := range ss {
		_ = x.Close()
	}
}

// pin pins every tool of server name into a new directory, with the
// read-only ones (by name) made side_effect: false as a reviewer would, and
// loads the manifests back.
func pin(t testing.TB, name string, srv remote.Server, readOnly ...string) (string, []*toolreg.Spec) {
	t.Helper()
	dir := t.TempDir()
	rep, err := remote.Pin(context.Background(), name, srv, nil, remote.PinOptions{Dir: dir}, remote.WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Refused) > 0 {
		t.Fatalf("pin refused %v", rep.Refused)
	}
	if _, err := rep.Write(); err != nil {
		t.Fatal(err)
	}
	for _, n := range readOnly {
		edit(t, filepath.Join(dir, name, n+".yaml"), "side_effect: true\n", "")
	}
	specs, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, specs
}

// edit replaces old with new in file, as a person editing a manifest would.
func edit(t testing.TB, file, old, new string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s does not hold %q:\n%s", file, old, b)
	}
	if err := os.WriteFile(file, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// textLogger is a slog logger into b, which a test reads while the runtime
// writes.
func textLogger(b *syncbuf.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// eventually polls cond until it holds, or fails t after 10s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func mustContain(t testing.TB, what, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%s does not say %q:\n%s", what, p, s)
		}
	}
}
