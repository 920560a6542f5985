package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/provider"
)

type benchArgs struct {
	Query string    `json:"query"`
	Limit int64     `json:"limit"`
	Tags  *[]string `json:"tags"`
}

// benchServer is a server of n tools, every other one side-effecting, each
// with three constrained params and annotations.
func benchServer(b *testing.B, n int) *Server {
	b.Helper()
	minLen, maxItems := 2, 5
	yes, no := true, false
	specs := make([]*toolreg.Spec, n)
	for i := range specs {
		specs[i] = &toolreg.Spec{
			Name:        fmt.Sprintf("tool_%04d", i),
			Description: fmt.Sprintf("Tool number %d: searches something and returns what it found.", i),
			SideEffect:  i%2 == 1,
			Params: []*toolreg.Param{
				{Name: "query", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "What to look for.", MinLength: &minLen, Pattern: "^[a-z ]+$"}},
				{Name: "limit", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Description: "How many.", Minimum: "1", Maximum: "100", Default: int64(10), HasDefault: true}},
				{Name: "tags", Schema: toolreg.Schema{Type: toolreg.TypeArray, Description: "Filters.", MaxItems: &maxItems,
					Items: &toolreg.Schema{Type: toolreg.TypeString, Enum: []any{"a", "b", "c"}}}, Optional: true},
			},
			Annotations: &toolreg.Annotations{Title: fmt.Sprintf("Tool %d", i), DestructiveHint: &no, IdempotentHint: &yes, OpenWorldHint: &no},
		}
	}
	bd := bindings.New(specs)
	fn := func(context.Context, benchArgs) (string, error) { return "ok", nil }
	for _, s := range specs {
		if s.SideEffect {
			bindings.Effect(bd, s.Name, fn)
		} else {
			bindings.ReadOnly(bd, s.Name, fn)
		}
	}
	bound, err := bd.Bind()
	if err != nil {
		b.Fatal(err)
	}
	eff, err := effector.New(bound.Effector, effector.NewMemoryStore())
	if err != nil {
		b.Fatal(err)
	}
	srv, err := New(bound, eff)
	if err != nil {
		b.Fatal(err)
	}
	return srv
}

// renderPerRequest makes tools/list render every tool anew, as a server
// without the cache would: the baseline the cached list is compared with.
func renderPerRequest(s *Server) {
	s.MCP().AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			tools, err := renderAll(s.bound.Pipeline.Tools())
			if err != nil {
				return nil, err
			}
			return &mcp.ListToolsResult{Tools: tools}, nil
		}
	})
}

// renderAll renders every tool's mcp form from scratch, with no cache: what
// each tools/list would cost a server that did not render once.
func renderAll(tools []*toolreg.Tool) ([]*mcp.Tool, error) {
	out := make([]*mcp.Tool, len(tools))
	for i, t := range tools {
		r, err := provider.Render(provider.MCP, t.Spec())
		if err != nil {
			return nil, err
		}
		if out[i], err = decodeTool(r.JSON); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// BenchmarkToolsList answers tools/list for 1,000 tools. The op=tools-list
// pair sends the request as raw JSON-RPC over the SDK's in-memory transport
// and reads the response's bytes, so it measures the server (the SDK's
// paging and encoding included) and not the SDK client's decoding:
// "cached" is the server as New makes it (rendered once), and
// "render-per-request" renders every entry on every request. The op=render
// pair isolates the schema work: the cached slice against one rendering of
// all 1,000 entries.
func BenchmarkToolsList(b *testing.B) {
	const n = 1000
	for _, mode := range []string{"cached", "render-per-request"} {
		b.Run("op=tools-list/list="+mode, func(b *testing.B) {
			srv := benchServer(b, n)
			if mode == "render-per-request" {
				renderPerRequest(srv)
			}
			ctx := context.Background()
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, st, nil)
			if err != nil {
				b.Fatal(err)
			}
			conn, err := ct.Connect(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { conn.Close(); ss.Wait() }()
			id := 0.0
			call := func(method, params string) json.RawMessage {
				id++
				rid, _ := jsonrpc.MakeID(id)
				if err := conn.Write(ctx, &jsonrpc.Request{ID: rid, Method: method, Params: json.RawMessage(params)}); err != nil {
					b.Fatal(err)
				}
				for {
					msg, err := conn.Read(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if r, ok := msg.(*jsonrpc.Response); ok && r.ID == rid {
						if r.Error != nil {
							b.Fatal(r.Error)
						}
						return r.Result
					}
				}
			}
			call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"v0"}}`)
			if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}); err != nil {
				b.Fatal(err)
			}
			if got := bytes.Count(call("tools/list", `{}`), []byte(`"inputSchema"`)); got != n {
				b.Fatalf("listed %d tools, want %d", got, n)
			}
			b.ReportAllocs()
			for b.Loop() {
				call("tools/list", `{}`)
			}
		})
	}
	b.Run("op=render/list=cached", func(b *testing.B) {
		srv := benchServer(b, n)
		b.ReportAllocs()
		for b.Loop() {
			if len(srv.Tools()) != n {
				b.Fatal("short list")
			}
		}
	})
	b.Run("op=render/list=render-per-request", func(b *testing.B) {
		srv := benchServer(b, n)
		tools := srv.bound.Pipeline.Tools()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := renderAll(tools); err != nil {
				b.Fatal(err)
			}
		}
	})
}
