// Package mcpjstest gives tests the TypeScript MCP SDK client of test/mcpjs:
// node, and the directory of its scripts, with the SDK pinned by its
// package-lock.json installed.
package mcpjstest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Dir is the directory of the client's scripts and pinned packages.
var Dir = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "test", "mcpjs")
}()

// Node returns the path of node, after installing the pinned SDK with npm
// ci when it is not there yet (.ci/run installs it up front).
func Node(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("this test runs the TypeScript MCP SDK client in node (Debian package nodejs, which .ci/run installs): %v", err)
	}
	if _, err := os.Stat(filepath.Join(Dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Fatalf("npm installs the TypeScript MCP SDK for this test (Debian package npm): %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund")
		cmd.Dir = Dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", Dir, err, out)
		}
	}
	return node
}
