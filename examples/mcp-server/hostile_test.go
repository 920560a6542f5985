package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The real binary, over its real stdin and stdout, as an MCP host runs it:
// each hostile line is answered with a JSON-RPC error and the lines after it
// are served; the process does not exit.
func TestTheBuiltServerSurvivesHostileLinesOnStdin(t *testing.T) {
	bin := build(t)
	cmd := exec.Command(bin, "-manifests", manifestsDir)
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
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Error("the server did not exit when its stdin closed")
		}
	})
	lines := make(chan map[string]any)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"not json": sc.Text()}
			}
			lines <- m
		}
		close(lines)
	}()
	send := func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("writing %.60q: %v", line, err)
		}
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatalf("after %.60q the server closed its stdout", line)
			}
			return m
		case err := <-exited:
			t.Fatalf("after %.60q the server exited: %v", line, err)
		case <-time.After(20 * time.Second):
			t.Fatalf("after %.60q no answer", line)
		}
		return nil
	}
	code := func(m map[string]any) any {
		e, _ := m["error"].(map[string]any)
		return e["code"]
	}
	tests := []struct {
		name, line string
		code       float64
		id         any
	}{
		{"a line that is not JSON", "not json at all", -32700, nil},
		{"JSON that is not JSON-RPC", `{"hello":"world"}`, -32600, nil},
		{"100k-deep nesting", strings.Repeat("[", 100000), -32600, nil},
		{"a line over the default 16 MiB bound", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 17<<20) + `"}}`, -32600, nil},
		{"a call before initialize", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_kb","arguments":{}}}`, -32600, float64(2)},
		{"a truncated line", `{"jsonrpc":"2.0","id":3,"method":"ping"`, -32700, nil},
	}
	for _, tt := range tests {
		m := send(tt.line)
		if code(m) != tt.code || m["id"] != tt.id {
			t.Errorf("%s: answered %v, want error %v with id %v", tt.name, m, tt.code, tt.id)
		}
		if m := send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`); m["id"] != "ping" || m["result"] == nil {
			t.Fatalf("%s: the ping after it got %v", tt.name, m)
		}
	}
	m := send(`{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"v0"}}}`)
	if m["id"] != float64(10) || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	caps := m["result"].(map[string]any)["capabilities"].(map[string]any)
	if tools, _ := caps["tools"].(map[string]any); tools == nil || tools["listChanged"] == true {
		t.Errorf("capabilities.tools = %v, want it present without listChanged", caps["tools"])
	}
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	m = send(`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"search_kb","arguments":{"query":"refund policy"}}}`)
	if res, _ := m["result"].(map[string]any); m["id"] != float64(11) || res == nil || res["isError"] == true {
		t.Fatalf("tools/call after the hostile lines: %v", m)
	}
}
