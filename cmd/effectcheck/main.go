package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/analysis/unitchecker"

	"github.com/beam-agents/toolreg/effectcheck"
	"github.com/beam-agents/toolreg/internal/diag"
)

// vetInvocation reports whether go vet -vettool is running us: it asks for
// -V=full and -flags, then passes flags and one JSON .cfg file per package.
func vetInvocation(args []string) bool {
	if len(args) == 0 {
		return false
	}
	if last := args[len(args)-1]; strings.HasSuffix(last, ".cfg") {
		return true
	}
	return len(args) == 1 && (strings.HasPrefix(args[0], "-V") || args[0] == "-flags")
}

func main() {
	if vetInvocation(os.Args[1:]) {
		unitchecker.Main(effectcheck.Analyzer) // does not return
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// tool is effectcheck to a machine: its rules.
var tool = diag.Tool{
	Name:           "effectcheck",
	InformationURI: effectcheck.Analyzer.URL,
	Rules: []diag.Rule{
		{ID: effectcheck.RuleInlineEffect, Description: "A function bound with bindings.Effect is used other than by its binding: its effect would run inline, where a retry repeats it."},
		{ID: effectcheck.RuleUnwrap, Description: "Tool.Unwrap is used outside package effector, bypassing the side-effect guard."},
	},
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("effectcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tests := fs.Bool("test", false, "also check test files (an effect function's own tests call it on purpose)")
	format := fs.String("format", "text", "output `format`: text, "+diag.FormatNames()+
		" (github: workflow commands that annotate the pull request; sarif: a SARIF 2.1.0 log; jsonl: one JSON object a line)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: effectcheck [-format format] [-test] [packages]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	machine, isMachine := diag.ParseFormat(*format)
	if *format != "text" && !isMachine {
		fmt.Fprintf(stderr, "effectcheck: unknown format %q: use text, %s\n", *format, diag.FormatNames())
		return 2
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	findings, err := effectcheck.Check(".", *tests, patterns...)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if isMachine {
		ds := make([]diag.Diagnostic, len(findings))
		for i, f := range findings {
			ds[i] = diag.Diagnostic{
				Severity: diag.Error,
				Rule:     f.Rule,
				File:     filepath.ToSlash(f.Pos.Filename),
				Line:     f.Pos.Line,
				Col:      f.Pos.Column,
				Title:    "effectcheck: " + f.Rule,
				Message:  f.Message,
			}
		}
		if err := diag.Write(stdout, machine, tool, ds); err != nil {
			fmt.Fprintln(stderr, "effectcheck:", err)
			return 2
		}
	} else {
		for _, f := range findings {
			fmt.Fprintln(stdout, f)
		}
	}
	if len(findings) > 0 {
		return 1
	}
	return 0
}
