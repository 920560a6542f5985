// Command support-agent is toolreg's example agent service: a customer-support
// agent whose tools are declared in ../../manifests and bound to Go functions
// at startup.
//
// It plays a scripted conversation (model turns with tool calls, no network):
// read-only tools run inline through the runner, side-effecting ones are
// staged as intents with Act, and after the activation succeeds its intents are
// drained, sent as beam-agents wire bytes to the effector, and executed once,
// with a SQLite dedup store in a state directory. Then it replays the same
// activation, as a retried bundle would, to show that the refund is not
// executed twice. Run it again and the store remembers: nothing runs twice
// across processes either.
//
//	go run ./examples/support-agent [-manifests dir] [-state dir] [-script file]
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

//go:embed conversation.json
var defaultScript []byte

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("support-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	manifests := fs.String("manifests", "manifests", "the tool manifests `dir`")
	state := fs.String("state", filepath.Join(".state", "support-agent"), "the state `dir` holding the effector's SQLite dedup store (created if missing)")
	scriptFile := fs.String("script", "", "a conversation script `file` (default: the embedded conversation.json)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	script := defaultScript
	if *scriptFile != "" {
		b, err := os.ReadFile(*scriptFile)
		if err != nil {
			fmt.Fprintf(stderr, "support-agent: %v\n", err)
			return 1
		}
		script = b
	}
	var conv conversation
	if err := json.Unmarshal(script, &conv); err != nil {
		fmt.Fprintf(stderr, "support-agent: script: %v\n", err)
		return 1
	}
	if _, err := os.Stat(*manifests); err != nil {
		fmt.Fprintf(stderr, "support-agent: no manifests at %q: run from the repository root or pass -manifests\n", *manifests)
		return 1
	}
	svc, err := start(ctx, *manifests, *state, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "support-agent: %v\n", err)
		return 1
	}
	defer svc.close()
	if err := svc.play(ctx, &conv); err != nil {
		fmt.Fprintf(stderr, "support-agent: %v\n", err)
		return 1
	}
	return 0
}
