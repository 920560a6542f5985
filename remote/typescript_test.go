package remote_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/mcpjstest"
	"github.com/beam-agents/toolreg/internal/syncbuf"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/remote"
	"github.com/beam-agents/toolreg/runner"
)

// The pin, the binding, the calls and a poisoned change, against a server
// nobody here wrote: the TypeScript MCP SDK's McpServer with zod schemas
// (test/mcpjs/server.mjs), over stdio and over streamable HTTP.
func TestTheTypeScriptSDKServer(t *testing.T) {
	t.Parallel()
	node := mcpjstest.Node(t)
	script := filepath.Join(mcpjstest.Dir, "server.mjs")
	for _, over := range []string{"stdio", "streamable HTTP"} {
		t.Run(over, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "pid")
			var srv remote.Server
			if over == "stdio" {
				srv = remote.Server{Command: []string{node, script, "stdio"}, Env: []string{"MCP_SERVER_PID_FILE=" + pidFile}}
			} else {
				srv = startHTTP(t, node, script, pidFile)
			}

			dir := t.TempDir()
			rep, err := remote.Pin(context.Background(), "issues", srv, nil, remote.PinOptions{Dir: dir}, remote.WithLogger(nil))
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, "the refusal", fmt.Sprint(rep.Refused), "find_by_id_or_name", `params.key.type: the type ["number","string"] is not one type`)
			if len(rep.Written) != 3 {
				t.Fatalf("pinned %d tools", len(rep.Written))
			}
			if _, err := rep.Write(); err != nil {
				t.Fatal(err)
			}
			// The review: the reader decides these two change nothing.
			edit(t, filepath.Join(dir, "issues", "search_issues.yaml"), "side_effect: true\n", "")
			edit(t, filepath.Join(dir, "issues", "server_time.yaml"), "side_effect: true\n", "")
			specs, err := loader.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, "search_issues' manifest", readFile(t, filepath.Join(dir, "issues", "search_issues.yaml")),
				"title: Search issues", "read_only_hint: true", "maximum: 50", "description: Words to look for", "required: false")

			var logs syncbuf.Buffer
			_, bound := bindAll(t, specs, remote.Servers{"issues": srv}, remote.WithLogger(textLogger(&logs)))

			// The same intent through two effectors whose stores do not
			// share it: the server deduplicates on the idempotency key.
			for range 2 {
				r := process(t, bound, effector.NewMemoryStore(), "create_issue", `{"title":"Login page crashes","labels":["bug"]}`)
				if r.Status != intent.StatusOK || string(r.Payload) != `{"id":1,"url":"https://issues.example/1"}` {
					t.Fatalf("create_issue: %v %s %s", r.Status, r.Payload, r.ErrorMessage)
				}
			}
			act := runner.NewActivation(bound.Pipeline, []byte("k"), 1)
			res, err := act.RunTool(context.Background(), "search_issues", json.RawMessage(`{"query":"crash","limit":"5"}`))
			if err != nil {
				t.Fatal(err)
			}
			if got := string(res.(json.RawMessage)); got != `{"issues":[{"id":1,"title":"Login page crashes"}]}` {
				t.Errorf("search_issues = %s: want the one issue, created once", got)
			}
			if _, err := act.RunTool(context.Background(), "search_issues", json.RawMessage(`{"query":""}`)); !errors.As(err, new(*toolreg.ToolArgumentError)) {
				t.Errorf("an empty query (minLength 1) = %v, want it refused before it is sent", err)
			}

			// The server poisons create_issue's description, and announces it.
			pid, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
			if err := syscall.Kill(n, syscall.SIGUSR1); err != nil {
				t.Fatal(err)
			}
			eventually(t, "create_issue withdrawn", func() bool {
				_, err := bound.Pipeline.Get("create_issue")
				var we *toolreg.ToolWithdrawnError
				return errors.As(err, &we) && !we.Temporary && strings.Contains(we.Reason, "id_rsa")
			})
			eventually(t, "search_issues offered again", func() bool { _, err := bound.Pipeline.Get("search_issues"); return err == nil })
			_, poisoned, _ := offered(t, bound.Pipeline)
			list, _ := bound.Pipeline.ProviderList("anthropic")
			if poisoned || strings.Contains(string(list), "id_rsa") {
				t.Error("the model is shown the poisoned description")
			}
			mustContain(t, "the log", logs.String(), "tool=create_issue", "withdrawn until it is re-pinned")
		})
	}
}

// startHTTP starts server.mjs over streamable HTTP and returns its server.
func startHTTP(t testing.TB, node, script, pidFile string) remote.Server {
	cmd := exec.Command(node, script, "http")
	cmd.Env = append(os.Environ(), "MCP_SERVER_PID_FILE="+pidFile)
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("server.mjs's stderr:\n%s", stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("server.mjs http: %v", err)
	}
	port := strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	return remote.Server{URL: "http://127.0.0.1:" + port + "/mcp"}
}
