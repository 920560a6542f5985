package mcpserver_test

import (
	"context"
	"fmt"
	"log"
	"testing/fstest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/mcpserver"
)

func Example() {
	ctx := context.Background()
	specs, err := loader.LoadFS(fstest.MapFS{"tools.yaml": {Data: []byte(manifests)}}, "tools.yaml")
	if err != nil {
		log.Fatal(err)
	}
	charges := 0
	b := bindings.New(specs)
	bindings.ReadOnly(b, "greet", func(ctx context.Context, a greetArgs) (string, error) { return "hello " + a.Name, nil })
	bindings.Effect(b, "charge", func(ctx context.Context, a chargeArgs) (map[string]int64, error) {
		charges++
		return map[string]int64{"charged": a.Amount}, nil
	})
	bound, err := b.Bind()
	if err != nil {
		log.Fatal(err)
	}
	eff, err := effector.New(bound.Effector, effector.NewMemoryStore())
	if err != nil {
		log.Fatal(err)
	}
	srv, err := mcpserver.New(bound, eff)
	if err != nil {
		log.Fatal(err)
	}

	// Serve one in-memory connection; srv.Run(ctx, &mcp.StdioTransport{})
	// serves stdio, srv.Handler(nil) streamable HTTP.
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range list.Tools {
		fmt.Printf("%s readOnlyHint=%v\n", t.Name, t.Annotations.ReadOnlyHint)
	}
	call := func(name string, args map[string]any, meta mcp.Meta) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s isError=%v: %s\n", name, res.IsError, res.Content[0].(*mcp.TextContent).Text)
	}
	call("greet", map[string]any{"name": "Ada"}, nil)
	call("greet", map[string]any{"name": 7}, nil)
	key := mcp.Meta{mcpserver.MetaIdempotencyKey: "order-1234-charge"}
	call("charge", map[string]any{"amount": 500}, key)
	call("charge", map[string]any{"amount": 500}, key) // a retry: answered from the dedup store
	fmt.Println("charges executed:", charges)
	// Output:
	// charge readOnlyHint=false
	// greet readOnlyHint=true
	// greet isError=false: "hello Ada"
	// greet isError=true: The call to greet was not run: its arguments do not match the tool's parameters.
	// - "name": expected string, got 7
	// Fix these and call the tool again.
	// charge isError=false: {"charged":500}
	// charge isError=false: {"charged":500}
	// charges executed: 1
}
