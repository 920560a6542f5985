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
