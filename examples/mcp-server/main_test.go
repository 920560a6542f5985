package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/mcpserver"
)

const manifestsDir = "../../manifests"

var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// build compiles this command, once for all tests, into a temporary
// directory: the end-to-end tests run the real binary, as an MCP host would.
func build(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			built.err = fmt.Errorf("the end-to-end tests build the server with the go command: put it on PATH: %v", err)
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "mcp-server-e2e-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "mcp-server")
		if out, err := exec.Command(goBin, "build", "-o", built.bin, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func connect(t *testing.T, bin, state string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cmd := exec.Command(bin, "-manifests", manifestsDir, "-state", state)
	cmd.Stderr = os.Stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// effects returns the effects the server executed, from its effects log.
func effects(t *testing.T, state string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "effects.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil // not [""]: an empty log holds no effect
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func text(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	if len(r.Content) != 1 {
		t.Fatalf("result has %d contents, want 1", len(r.Content))
	}
	return r.Content[0].(*mcp.TextContent).Text
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// modelMessage is what toolreg tells a model about args for the manifest's
// tool, computed in this process from the same manifests.
func modelMessage(t *testing.T, tool, args string) string {
	t.Helper()
	specs, err := loader.Load(manifestsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if s.Name == tool {
			_, err := toolreg.NewTool(s).CheckArgs(json.RawMessage(args))
			var argErr *toolreg.ToolArgumentError
			if !errors.As(err, &argErr) {
				t.Fatalf("CheckArgs(%s) = %v, want a *toolreg.ToolArgumentError", args, err)
			}
			return argErr.ModelMessage()
		}
	}
	t.Fatalf("no manifest for %s", tool)
	return ""
}

func TestTheBuiltServerOverStdio(t *testing.T) {
	bin := build(t)
	state := t.TempDir()
	cs := connect(t, bin, state)
	ctx := context.Background()

	t.Run("lists every tool of the manifests in the MCP form", func(t *testing.T) {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*mcp.ToolAnnotations{}
		for _, tl := range res.Tools {
			got[tl.Name] = tl.Annotations
		}
		yes, no := true, false
		want := map[string]*mcp.ToolAnnotations{
			"lookup_customer":   {Title: "Look up customer", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no},
			"lookup_order":      {ReadOnlyHint: true, IdempotentHint: true},
			"search_orders":     {ReadOnlyHint: true, IdempotentHint: true},
			"search_kb":         {Title: "Search knowledge base", ReadOnlyHint: true, IdempotentHint: true},
			"refund_order":      {Title: "Refund order", DestructiveHint: &yes, OpenWorldHint: &yes},
			"refund_over_limit": {Title: "Refund over the limit", DestructiveHint: &yes, OpenWorldHint: &yes},
			"send_email":        {Title: "Send email", DestructiveHint: &no, OpenWorldHint: &yes},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("annotations by tool (-want +got):\n%s", diff)
		}
		specs, err := loader.Load(manifestsDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range specs {
			if _, ok := got[s.Name]; !ok {
				t.Errorf("tool %q of %s is not served", s.Name, s.Pos)
			}
		}
		if len(got) != len(specs) {
			t.Errorf("served %d tools, the manifests declare %d", len(got), len(specs))
		}
	})

	t.Run("runs every read-only tool of the manifests", func(t *testing.T) {
		for _, c := range []struct{ tool, args, want string }{
			{"lookup_order", `{"order_id":"ord_2026_000098"}`, `{"currency":"EUR","customer_id":"cus_8f3k2p","id":"ord_2026_000098","status":"delivered","total":12.5}`},
			{"search_orders", `{"customer_id":"cus_8f3k2p","status":"refunded"}`, `{"orders":[{"currency":"EUR","customer_id":"cus_8f3k2p","id":"ord_2025_000871","status":"refunded","total":80}]}`},
			{"search_orders", `{"customer_id":"cus_8f3k2p","limit":"2"}`, `{"orders":[{"currency":"EUR","customer_id":"cus_8f3k2p","id":"ord_2026_000123","status":"paid","total":49.9},{"currency":"EUR","customer_id":"cus_8f3k2p","id":"ord_2026_000098","status":"delivered","total":12.5}]}`},
			{"search_kb", `{"query":"refund"}`, ""},
		} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(c.args)})
			if err != nil {
				t.Fatalf("%s %s: %v", c.tool, c.args, err)
			}
			if res.IsError {
				t.Errorf("%s %s: isError: %s", c.tool, c.args, text(t, res))
				continue
			}
			if got := jsonOf(t, res.StructuredContent); c.want != "" && got != c.want {
				t.Errorf("%s %s = %s, want %s", c.tool, c.args, got, c.want)
			}
		}
	})

	t.Run("runs a valid read-only call", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup_customer",
			Arguments: map[string]any{"customer_id": "cus_8f3k2p"}})
		if err != nil {
			t.Fatal(err)
		}
		want := `{"email":"ada@example.test","id":"cus_8f3k2p","name":"Ada Lovelace","plan":"pro"}`
		if res.IsError || jsonOf(t, res.StructuredContent) != want {
			t.Errorf("result = %s, want structured content %s", jsonOf(t, res), want)
		}
	})

	t.Run("answers an invalid call with the model message", func(t *testing.T) {
		const args = `{"customer_id":"bob","include_history":"maybe"}`
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup_customer", Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError {
			t.Error("isError = false, want true")
		}
		if diff := cmp.Diff(modelMessage(t, "lookup_customer", args), text(t, res)); diff != "" {
			t.Errorf("text (-want +got):\n%s", diff)
		}
	})

	t.Run("executes an effectful call made twice with one idempotency key once", func(t *testing.T) {
		call := func(cs *mcp.ClientSession, key string) *mcp.CallToolResult {
			t.Helper()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "refund_order",
				Arguments: map[string]any{"order_id": "ord_2026_000123", "amount": 49.9, "reason": "duplicate_charge"},
				Meta:      mcp.Meta{mcpserver.MetaIdempotencyKey: key}})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError {
				t.Fatalf("isError: %s", text(t, res))
			}
			return res
		}
		first := call(cs, "refund-7f1c")
		again := call(cs, "refund-7f1c")
		if n := len(effects(t, state)); n != 1 {
			t.Fatalf("%d effects logged, want 1", n)
		}
		if jsonOf(t, first) != jsonOf(t, again) {
			t.Errorf("the retry answered %s, the first call %s", jsonOf(t, again), jsonOf(t, first))
		}
		// A restarted server answers from its SQLite store too.
		restarted := call(connect(t, bin, state), "refund-7f1c")
		if n := len(effects(t, state)); n != 1 {
			t.Errorf("after a restart: %d effects logged, want 1", n)
		}
		if jsonOf(t, first) != jsonOf(t, restarted) {
			t.Errorf("the restarted server answered %s, the first call %s", jsonOf(t, restarted), jsonOf(t, first))
		}
		call(cs, "refund-8a2d")
		if n := len(effects(t, state)); n != 2 {
			t.Errorf("a call with another key: %d effects logged, want 2", n)
		}
	})
}

// TestTheBuiltServerRunsARequestReplayedWithItsIDOnce drives the binary with
// raw JSON-RPC lines, as a host replaying a request would: the SDK's client
// never reuses a request id.
func TestTheBuiltServerRunsARequestReplayedWithItsIDOnce(t *testing.T) {
	bin := build(t)
	state := t.TempDir()
	cmd := exec.Command(bin, "-manifests", manifestsDir, "-state", state)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	send := func(line string) {
		t.Helper()
		if _, err := fmt.Fprintln(stdin, line); err != nil {
			t.Fatal(err)
		}
	}
	reply := func(id string) string {
		t.Helper()
		for lines.Scan() {
			var m struct{ ID json.RawMessage }
			if json.Unmarshal(lines.Bytes(), &m) == nil && string(m.ID) == id {
				return lines.Text()
			}
		}
		t.Fatalf("no reply to %s: %v", id, lines.Err())
		return ""
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"v0"}}}`)
	reply("1")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	const call = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"send_email","arguments":{"to":"ada@example.test","subject":"Your refund","body":"Done."}}}`
	send(call)
	first := reply("5")
	send(call)
	again := reply("5")
	if n := len(effects(t, state)); n != 1 {
		t.Errorf("request 5 sent twice: %d effects logged, want 1", n)
	}
	if first != again || !bytes.Contains([]byte(first), []byte(`"message_id"`)) {
		t.Errorf("the replies differ or are not the email's result:\n%s\n%s", first, again)
	}
	send(strings.Replace(call, `"id":5`, `"id":6`, 1))
	reply("6")
	if n := len(effects(t, state)); n != 2 {
		t.Errorf("request 6: %d effects logged in all, want 2", n)
	}
}

func TestTheBuiltServerOverStreamableHTTP(t *testing.T) {
	bin := build(t)
	state := t.TempDir()
	cmd := exec.Command(bin, "-manifests", manifestsDir, "-state", state, "-transport", "http", "-addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	var url string
	for url == "" && lines.Scan() {
		_, url, _ = strings.Cut(lines.Text(), "streamable HTTP at ")
	}
	if url == "" {
		t.Fatalf("the server never said where it listens: %v", lines.Err())
	}
	go io.Copy(io.Discard, stderr)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := loader.Load(manifestsDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != len(specs) {
		t.Errorf("listed %d tools, want the manifests' %d", len(list.Tools), len(specs))
	}
	var results []string
	for range 2 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_email",
			Arguments: map[string]any{"to": "ada@example.test", "subject": "Your refund", "body": "Done."},
			Meta:      mcp.Meta{mcpserver.MetaIdempotencyKey: "email-42"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError {
			t.Fatalf("isError: %s", text(t, res))
		}
		results = append(results, jsonOf(t, res))
	}
	if n := len(effects(t, state)); n != 1 {
		t.Errorf("one call sent twice: %d effects logged, want 1", n)
	}
	if results[0] != results[1] {
		t.Errorf("the retry answered %s, the first call %s", results[1], results[0])
	}
	cs.Close()

	// SIGINT shuts the server down cleanly.
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("after SIGINT: %v, want exit status 0", err)
	}
}
