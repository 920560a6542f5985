// Command benchstartup measures what starting a server of n tools costs, for
// scripts/bench-load.sh: it writes n single-tool YAML manifests (every other
// one side-effecting, all sharing one pattern and one format, in 100 shapes
// that differ in a maximum, each param described in words of its own), then, in one
// process each, either parses them as bare YAML into maps (the floor) or
// loads them, binds every tool to a Go function, builds the effector and the
// MCP server (the startup). It prints one line:
//
//	mode n wall-ns heap-held-B
//
// wall-ns is the time from reading the first file to the result built;
// heap-held-B is the heap in use after a GC with the result held, less the
// heap before. The script takes peak memory (max RSS) from /usr/bin/time.
// BENCHSTARTUP_MEMPROFILE=file writes a heap profile of what is held.
//
// Usage: go run ./scripts/benchstartup write DIR N
//
//	go run ./scripts/benchstartup parse|startup DIR
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/mcpserver"
)

const manifest = `name: tool_%05d
description: Look up order %d for a customer and return its status and items.
side_effect: %t
params:
  customer_id:
    type: string
    description: The id of the customer whose order %d is looked up.
    pattern: "^cus_[a-z0-9]{6,24}$"
  email:
    type: string
    description: Where to send the receipt.
    format: email
    required: false
  status:
    type: string
    enum: [pending, paid, shipped]
    required: false
  limit:
    type: integer
    description: How many results to return.
    default: 10
    minimum: 1
    maximum: %d
`

type args struct {
	CustomerID string  `json:"customer_id"`
	Email      *string `json:"email"`
	Status     *string `json:"status"`
	Limit      int64   `json:"limit"`
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: benchstartup write DIR N | parse DIR | startup DIR")
		os.Exit(2)
	}
	dir := os.Args[2]
	switch os.Args[1] {
	case "write":
		n, err := strconv.Atoi(os.Args[3])
		check(err)
		for i := range n {
			name := filepath.Join(dir, fmt.Sprintf("tool_%05d.yaml", i))
			check(os.WriteFile(name, fmt.Appendf(nil, manifest, i, i, i%2 == 1, i, 50+i%100), 0o644))
		}
	case "parse":
		measure("parse", func() (int, any) {
			files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
			check(err)
			docs := make([]map[string]any, len(files))
			for i, f := range files {
				b, err := os.ReadFile(f)
				check(err)
				check(yaml.Unmarshal(b, &docs[i]))
			}
			return len(docs), docs
		})
	case "startup":
		measure("startup", func() (int, any) {
			specs, err := loader.Load(dir)
			check(err)
			bd := bindings.New(specs)
			for _, s := range specs {
				// A function bound as an effect is bound nowhere else
				// (effectcheck): each binding gets a literal of its own.
				if s.SideEffect {
					bindings.Effect(bd, s.Name, func(context.Context, args) (string, error) { return "ok", nil })
				} else {
					bindings.ReadOnly(bd, s.Name, func(context.Context, args) (string, error) { return "ok", nil })
				}
			}
			bound, err := bd.Bind()
			check(err)
			eff, err := effector.New(bound.Effector, effector.NewMemoryStore())
			check(err)
			srv, err := mcpserver.New(bound, eff)
			check(err)
			return len(specs), srv
		})
	default:
		fmt.Fprintln(os.Stderr, "benchstartup: unknown mode", os.Args[1])
		os.Exit(2)
	}
}

func measure(mode string, build func() (int, any)) {
	var before, held runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if f := os.Getenv("BENCHSTARTUP_CPUPROFILE"); f != "" {
		w, err := os.Create(f)
		check(err)
		check(pprof.StartCPUProfile(w))
		defer pprof.StopCPUProfile()
	}
	t0 := time.Now()
	n, v := build()
	wall := time.Since(t0)
	runtime.GC()
	runtime.ReadMemStats(&held)
	if f := os.Getenv("BENCHSTARTUP_MEMPROFILE"); f != "" {
		w, err := os.Create(f)
		check(err)
		check(pprof.WriteHeapProfile(w))
		check(w.Close())
	}
	runtime.KeepAlive(v)
	fmt.Printf("%s %d %d %d\n", mode, n, wall.Nanoseconds(), int64(held.HeapAlloc)-int64(before.HeapAlloc))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchstartup:", err)
		os.Exit(1)
	}
}
