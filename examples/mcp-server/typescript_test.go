package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/internal/mcpjstest"
)

var mcpjs = mcpjstest.Dir

// TestTheTypeScriptSDKClientAcceptsEveryStructuredContent: the TypeScript
// MCP SDK's client, whose callTool validates structuredContent against the
// tool's outputSchema with ajv (and throws when it does not validate, or is
// missing), lists every tool of the example manifests with its outputSchema
// and calls each read-only tool and both effects over stdio.
func TestTheTypeScriptSDKClientAcceptsEveryStructuredContent(t *testing.T) {
	node := mcpjstest.Node(t)
	bin := build(t)
	calls := `[
		{"name": "lookup_customer", "arguments": {"customer_id": "cus_8f3k2p", "include_history": true}},
		{"name": "lookup_order", "arguments": {"order_id": "ord_2026_000123"}},
		{"name": "search_orders", "arguments": {"customer_id": "cus_8f3k2p"}},
		{"name": "search_kb", "arguments": {"query": "refund"}},
		{"name": "refund_order", "arguments": {"order_id": "ord_2026_000123", "amount": 20, "reason": "damaged"}},
		{"name": "send_email", "arguments": {"to": "ada@example.test", "subject": "Your refund", "body": "Done."}}
	]`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(mcpjs, "client.mjs"), calls, bin, "-manifests", manifestsDir, "-state", t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client failed: %v\n%s", err, stderr.String())
	}
	var got struct {
		Tools map[string]struct {
			OutputSchema map[string]any `json:"outputSchema"`
		} `json:"tools"`
		Calls []struct {
			Name              string         `json:"name"`
			IsError           bool           `json:"isError"`
			StructuredContent map[string]any `json:"structuredContent"`
			Text              string         `json:"text"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Tools) != 7 {
		t.Errorf("tools/list gave %d tools, want the 7 of the example manifests", len(got.Tools))
	}
	for name, tool := range got.Tools {
		if tool.OutputSchema["type"] != "object" {
			t.Errorf("%s: outputSchema %v, want an object schema", name, tool.OutputSchema)
		}
	}
	if len(got.Calls) != 6 {
		t.Fatalf("%d calls answered, want 6", len(got.Calls))
	}
	for _, c := range got.Calls {
		if c.IsError || c.StructuredContent == nil {
			t.Errorf("%s: isError %v, structuredContent %v: %s", c.Name, c.IsError, c.StructuredContent, c.Text)
		}
	}
}
