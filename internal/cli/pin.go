package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/remote"
)

var pinCommand = &command{
	name:  "pin",
	args:  "SERVER",
	short: "write or update the manifests of the tools an MCP server serves",
	long: `Pin connects to the MCP server SERVER (named in the servers' configuration,
-config, as a stdio command or a streamable HTTP URL), lists its tools, and
writes or updates the manifests that pin them, so that a re-pin is a pull
request whose diff a person reviews (toolreg diff calls a changed description
a safety change, and classifies schema changes as for local tools).

A tool already pinned (a manifest in -dir with remote: server: SERVER) has its
manifest rewritten with what the server serves now (description, params from
its input schema, returns from its output schema, annotations, title), keeping
the manifest's own decisions: name, side_effect, strict, approval, tags and
keywords. A new tool gets -dir/SERVER/NAME.yaml, with side_effect: true until
a person decides otherwise: the server's readOnlyHint is pinned, never obeyed.
Which tools: those already pinned, those -tools names, every one with -all;
with nothing pinned from SERVER yet and no -tools, every tool it serves.

A tool whose schema a manifest cannot express exactly (anyOf, $ref, a list of
types, a pattern RE2 and JavaScript read differently, an open object in an
output schema, ...) is refused with every reason, not simplified; the others
are written. What pin does that changes no accepted value (an annotation such
as title left out, an open input object closed) is printed as a note.

The exit status is 0 when every tool asked for is pinned, 1 when one is
refused, the server cannot be reached, or a manifest no longer served is found
(pin keeps it: remove it, and the service's startup stops refusing), and 2 on
a usage error.
`,
	setup: func(fs *flag.FlagSet) func(*env, []string) int {
		config := fs.String("config", remote.DefaultConfig, "the servers' configuration `file`")
		dir := fs.String("dir", "manifests", "the manifests' `directory`: read for what is pinned, and where new manifests go")
		tools := fs.String("tools", "", "also pin these comma-separated served `tools`")
		all := fs.Bool("all", false, "pin every tool the server serves")
		prefix := fs.String("prefix", "", "put this `prefix` before the name of each newly pinned tool")
		timeout := fs.Duration("timeout", 30*time.Second, "give up connecting and listing after this `duration`")
		dry := fs.Bool("n", false, "print what would be written, and write nothing")
		return func(e *env, args []string) int {
			if len(args) != 1 {
				fmt.Fprintln(e.stderr, "toolreg pin: name one server, as the configuration names it: toolreg pin SERVER")
				return exitUsage
			}
			name := args[0]
			servers, err := remote.LoadConfig(*config)
			if err != nil {
				fmt.Fprintf(e.stderr, "toolreg pin: %v\n", err)
				return exitUsage
			}
			cfg, ok := servers[name]
			if !ok {
				fmt.Fprintf(e.stderr, "toolreg pin: %s names no server %q: add it under servers:, with its command or url\n", *config, name)
				return exitUsage
			}
			var existing []*toolreg.Spec
			if st, err := os.Stat(*dir); err == nil && st.IsDir() {
				specs, err := loader.Load(*dir)
				if err != nil {
					reportErr(e, "pin", err)
					fmt.Fprintln(e.stderr, "toolreg pin: fix the manifests first: pin keeps their decisions, so it must read them")
					return exitFindings
				}
				existing = specs
			}
			var only []string
			for _, t := range strings.Split(*tools, ",") {
				if t = strings.TrimSpace(t); t != "" {
					only = append(only, t)
				}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			rep, err := remote.Pin(ctx, name, cfg, existing, remote.PinOptions{Dir: *dir, Tools: only, All: *all, Prefix: *prefix},
				remote.WithConnectTimeout(*timeout), remote.WithLogger(nil))
			if err != nil {
				fmt.Fprintf(e.stderr, "toolreg pin: %v\n", err)
				return exitFindings
			}
			return printPin(e, rep, *dry)
		}
	},
}

func printPin(e *env, rep *remote.PinReport, dry bool) int {
	status := exitOK
	for _, p := range rep.Written {
		for _, n := range p.Note {
			fmt.Fprintf(e.stderr, "%s: %s: note: %s\n", p.File, p.Spec.Name, n)
		}
	}
	if !dry {
		files, err := rep.Write()
		for _, f := range files {
			fmt.Fprintf(e.stdout, "wrote %s\n", f)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "toolreg pin: %v\n", err)
			return exitFindings
		}
	} else {
		for _, p := range rep.Written {
			if !p.Same {
				fmt.Fprintf(e.stdout, "would write %s:\n%s", p.File, p.Data)
			}
		}
	}
	same := 0
	for _, p := range rep.Written {
		if p.Same {
			same++
		}
	}
	if same > 0 {
		fmt.Fprintf(e.stdout, "%d manifest(s) already pin what %q serves\n", same, rep.Server)
	}
	for _, n := range rep.RefusedNames() {
		status = exitFindings
		for _, r := range rep.Refused[n] {
			fmt.Fprintf(e.stderr, "toolreg pin: refused %q of server %q: %s\n", n, rep.Server, r)
		}
	}
	for _, s := range rep.Gone {
		status = exitFindings
		fmt.Fprintf(e.stderr, "%s: %s: server %q no longer serves tool %q: the manifest is kept; remove it (a breaking change for its callers), or the service refuses to start\n", s.Pos, s.Name, rep.Server, s.Remote.Tool)
	}
	if len(rep.Unpinned) > 0 {
		fmt.Fprintf(e.stderr, "toolreg pin: server %q also serves %d tool(s) no manifest pins, which are not offered: %s (pin them with -tools)\n", rep.Server, len(rep.Unpinned), strings.Join(rep.Unpinned, ","))
	}
	if status == exitOK && len(rep.Written) > 0 && !dry {
		fmt.Fprintln(e.stdout, "review the change with toolreg diff before it merges")
	}
	return status
}
