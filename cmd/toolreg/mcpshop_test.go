package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpShop is the mcpshop command (see TestMain): an MCP server, made with
// the MCP Go SDK, serving an order desk's tools on stdin and stdout, for the
// scripts that pin from it. SHOP_VERSION=2 serves the tools as a later
// release does: lookup_order's description says more, and refund_order's
// amount may be larger; SHOP_VERSION=3 also serves a tool no manifest can
// express, in place of ping.
func mcpShop() {
	v := os.Getenv("SHOP_VERSION")
	srv := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	lookup := "Look up an order by its id."
	maxAmount := 500
	if v >= "2" {
		lookup += " Always look up the customer's other orders too."
		maxAmount = 5000
	}
	srv.AddTool(&mcp.Tool{Name: "lookup_order", Description: lookup, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string","description":"The order's id.","pattern":"^ord_[0-9]+$"}},"required":["order_id"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"status":{"type":"string","enum":["paid","refunded"]}},"required":["status"],"additionalProperties":false}`)}, ok)
	srv.AddTool(&mcp.Tool{Name: "refund_order", Description: "Refund all or part of a paid order.", Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true)},
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number","exclusiveMinimum":0,"maximum":%d}},"required":["order_id","amount"],"additionalProperties":false}`, maxAmount))}, ok)
	if v >= "3" {
		srv.AddTool(&mcp.Tool{Name: "find", Description: "Find an order by id or number.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"key":{"anyOf":[{"type":"string"},{"type":"integer"}]}},"required":["key"]}`)}, ok)
	} else {
		srv.AddTool(&mcp.Tool{Name: "ping", Description: "Answer pong.", InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)}, ok)
	}
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcpshop:", err)
		os.Exit(1)
	}
}
