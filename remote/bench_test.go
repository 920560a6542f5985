package remote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/remote"
)

// hundredTools is a server of 100 tools, each with a described, constrained
// input schema and an output schema, as a real server's tools have.
func hundredTools() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hundred", Version: "1"}, nil)
	for i := range 100 {
		in := fmt.Sprintf(`{"type":"object","properties":{
			"id":{"type":"string","description":"The record's id.","pattern":"^rec_[0-9]+$"},
			"limit":{"type":"integer","description":"At most this many.","minimum":1,"maximum":%d,"default":10},
			"order":{"type":"string","enum":["asc","desc"]},
			"fields":{"type":"array","items":{"type":"string","maxLength":64},"maxItems":20}},
			"required":["id"],"additionalProperties":false}`, 100+i)
		out := `{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"score":{"type":"number"}},"required":["id","score"],"additionalProperties":false}},"next":{"type":"string"}},"required":["items"],"additionalProperties":false}`
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool_%03d", i), Description: fmt.Sprintf("Tool number %d: finds records by id and ranks them.", i),
			InputSchema: json.RawMessage(in), OutputSchema: json.RawMessage(out), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	return srv
}

// BenchmarkStartup100 is a service's startup with 100 tools pinned from one
// local server (connect, list, check every pinned contract, bind), next to
// what it costs to connect and list them with the bare MCP Go SDK client, in
// the same run; the bound is 2x. Over the in-memory transport, where
// the transport costs least and toolreg's own work shows most.
func BenchmarkStartup100(b *testing.B) {
	srv := hundredTools()
	server := remote.Server{Transport: inMemory(srv)}
	_, specs := pin(b, "hundred", server)
	if len(specs) != 100 {
		b.Fatalf("pinned %d tools", len(specs))
	}
	ctx := context.Background()
	b.Run("bare-sdk-connect-list", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			t, err := server.Transport()
			if err != nil {
				b.Fatal(err)
			}
			sess, err := mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "1"}, nil).Connect(ctx, t, nil)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for _, err := range sess.Tools(ctx, nil) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != 100 {
				b.Fatalf("listed %d", n)
			}
			_ = sess.Close()
		}
	})
	b.Run("toolreg-connect-check-bind", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			set, err := remote.Connect(ctx, specs, remote.Servers{"hundred": server}, remote.WithLogger(nil))
			if err != nil {
				b.Fatal(err)
			}
			bd := bindings.New(specs)
			set.Bind(bd)
			bound, err := bd.Bind()
			if err != nil || bound.Pipeline.Len() != 100 {
				b.Fatal(err)
			}
			_ = set.Close()
		}
	})
}
