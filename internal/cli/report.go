package cli

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/diag"
)

// outputFlag declares -format on fs, the one flag that selects a command's
// output: "text" (the default) or the command's other human forms, or one of
// package diag's machine-readable formats. It returns the chosen value.
func outputFlag(fs *flag.FlagSet, human ...string) *string {
	names := append(append([]string{}, human...), diag.FormatNames())
	return fs.String("format", human[0], "output `format`: "+strings.Join(names, ", ")+
		" (github: workflow commands that annotate the pull request; sarif: a SARIF 2.1.0 log; jsonl: one JSON object a line)")
}

// checkFormat reports whether format is one of human or a diag format, and
// says on stderr what to use instead when it is not.
func checkFormat(e *env, cmd, format string, human ...string) bool {
	for _, h := range human {
		if format == h {
			return true
		}
	}
	if _, ok := diag.ParseFormat(format); ok {
		return true
	}
	fmt.Fprintf(e.stderr, "toolreg %s: unknown format %q: use %s or %s\n", cmd, format, strings.Join(human, ", "), diag.FormatNames())
	return false
}

// diagTool describes toolreg command cmd and its rules to package diag.
func diagTool(cmd string, rules ...diag.Rule) diag.Tool {
	bi, _ := debug.ReadBuildInfo()
	return diag.Tool{
		Name:           "toolreg " + cmd,
		Version:        moduleVersion(bi),
		InformationURI: "https://pkg.go.dev/" + modulePath + "/cmd/toolreg",
		Rules:          rules,
	}
}

// writeDiags writes ds to stdout in format; it fails only when stdout does.
func writeDiags(e *env, cmd string, format diag.Format, tool diag.Tool, ds []diag.Diagnostic) bool {
	if err := diag.Write(e.stdout, format, tool, ds); err != nil {
		fmt.Fprintf(e.stderr, "toolreg %s: %v\n", cmd, err)
		return false
	}
	return true
}

// diagnostic places a finding about tool at path, at pos, for a machine.
func diagnostic(sev diag.Severity, rule string, pos toolreg.Pos, tool, path, msg string) diag.Diagnostic {
	d := diag.Diagnostic{Severity: sev, Rule: rule, Line: pos.Line, Col: pos.Col, Message: msg}
	if pos.IsValid() {
		d.File = diagFile(pos.File)
	}
	var title []string
	for _, s := range []string{tool, path} {
		if s != "" {
			title = append(title, s)
		}
	}
	d.Title = strings.Join(title, ": ")
	return d
}

// diagFile names file as CI resolves it: slash-separated, relative to the
// working directory (the checkout's root) where it is inside it.
func diagFile(file string) string {
	if filepath.IsAbs(file) {
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(wd, file); err == nil && !strings.HasPrefix(rel, "..") {
				file = rel
			}
		}
	}
	return filepath.ToSlash(filepath.Clean(file))
}

// findingDiag is a load finding for a machine, as rule.
func findingDiag(rule string, f finding) diag.Diagnostic {
	p := f.problem
	if p.Message == "" {
		return diag.Diagnostic{Severity: diag.Error, Rule: rule, Message: f.text}
	}
	return diagnostic(diag.Error, rule, p.Pos, p.Tool, p.Path, p.Message)
}
