package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/internal/mcpjstest"
	"github.com/beam-agents/toolreg/mcpserver"
)

// serveApprovals is the argument that makes this test binary an MCP server
// over stdio, of big_refund, logging each run to DIR/runs.log: the server
// the TypeScript client starts.
const serveApprovals = "serve-approvals"

func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == serveApprovals {
		os.Exit(serveApprovalsOverStdio(os.Args[2]))
	}
	os.Exit(m.Run())
}

func serveApprovalsOverStdio(dir string) int {
	log, err := os.OpenFile(filepath.Join(dir, "runs.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer log.Close()
	var runs atomic.Int64
	srv, _, err := approvalServer(effector.NewMemoryStore(), func(a bigRefundArgs) int64 {
		b, _ := json.Marshal(a)
		log.Write(append(b, '\n'))
		return runs.Add(1)
	}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := srv.Run(context.Background(), mcpserver.StdioTransport()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

var mcpjs = mcpjstest.Dir

// TestTheTypeScriptSDKClientApprovesAndDeclinesOverElicitation: the
// TypeScript MCP SDK's client, declaring the elicitation capability, calls
// big_refund twice with one idempotency key against this package's server
// in another process over stdio, and answers the approval question: accept
// runs the refund once and the retry gets the same result without asking
// again; decline runs nothing.
func TestTheTypeScriptSDKClientApprovesAndDeclinesOverElicitation(t *testing.T) {
	node := mcpjstest.Node(t)
	call := `{"name": "big_refund", "arguments": {"order_id": "ord_ts", "amount": 700}, "_meta": {"toolreg/idempotency-key": "ts-1"}}`
	for _, c := range []struct {
		action string
		runs   int
	}{
		{"accept", 1},
		{"decline", 0},
	} {
		t.Run(c.action, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join(mcpjs, "elicit.mjs"), c.action, call, os.Args[0], serveApprovals, dir)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("the TypeScript client failed: %v\n%s", err, stderr.String())
			}
			var got struct {
				Asked []string `json:"asked"`
				Calls []struct {
					IsError           bool           `json:"isError"`
					StructuredContent map[string]any `json:"structuredContent"`
					Text              string         `json:"text"`
					Meta              map[string]any `json:"meta"`
				} `json:"calls"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if len(got.Asked) != 1 || len(got.Calls) != 2 {
				t.Fatalf("asked %d times, %d calls answered; want one question, two answers: %s", len(got.Asked), len(got.Calls), out)
			}
			id, _ := got.Calls[0].Meta[mcpserver.MetaApprovalID].(string)
			for _, want := range []string{"big_refund", "Refunds above 500 EUR need a second person.", `"amount": 700`, id} {
				if id == "" || !strings.Contains(got.Asked[0], want) {
					t.Errorf("the question does not say %q:\n%s", want, got.Asked[0])
				}
			}
			for i, r := range got.Calls {
				switch c.action {
				case "accept":
					if r.IsError || r.StructuredContent["refund_id"] != "re_1" || r.StructuredContent["amount"] != 700.0 {
						t.Errorf("call %d: isError %v, %v: %s; want the refund's result", i, r.IsError, r.StructuredContent, r.Text)
					}
				case "decline":
					if !r.IsError || !strings.Contains(r.Text, "approval "+id+" was denied") || r.Meta[mcpserver.MetaApprovalState] != "denied" {
						t.Errorf("call %d: isError %v, _meta %v: %s; want it declined, naming the approval", i, r.IsError, r.Meta, r.Text)
					}
				}
			}
			log, err := os.ReadFile(filepath.Join(dir, "runs.log"))
			if err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(log, []byte("\n")); n != c.runs {
				t.Errorf("the refund ran %d times, want %d:\n%s", n, c.runs, log)
			}
		})
	}
}
