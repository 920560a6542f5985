package cli

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
)

// defaultPaths is where a command looks for manifests when it is given none.
var defaultPaths = []string{"./manifests"}

// loadSpecs loads and validates the manifests in paths (defaultPaths when
// empty). When they do not load it writes every finding to stderr, one a
// line, and returns ok false.
func loadSpecs(e *env, cmd string, paths []string) (specs []*toolreg.Spec, ok bool) {
	specs, fs := load(paths)
	if fs != nil {
		printFindings(e, cmd, fs)
		return nil, false
	}
	return specs, true
}

// load loads and validates the manifests in paths (defaultPaths when empty),
// and returns the findings, sorted by position, when they do not load.
func load(paths []string) ([]*toolreg.Spec, []finding) {
	if len(paths) == 0 {
		paths = defaultPaths
	}
	specs, err := loader.Load(paths...)
	if err != nil {
		return nil, sortedFindings(err)
	}
	if len(specs) == 0 {
		// A CI job vetting a mistyped directory must not pass by vetting nothing.
		return nil, []finding{{text: fmt.Sprintf("no manifests (.yaml, .yml or .cue files) in %q: name the files or directories that hold them", paths)}}
	}
	return specs, nil
}

// reportErr writes err to stderr as findings, one a line, sorted by position:
// every problem of a *toolreg.ToolDefinitionError, every
// *toolreg.DuplicateToolError, and any other error as it says itself.
func reportErr(e *env, cmd string, err error) {
	printFindings(e, cmd, sortedFindings(err))
}

func sortedFindings(err error) []finding {
	fs := findings(nil, err)
	slices.SortStableFunc(fs, func(a, b finding) int {
		return cmp.Or(
			// As the loader orders files: by their cleaned paths.
			cmp.Compare(filepath.ToSlash(filepath.Clean(a.pos.File)), filepath.ToSlash(filepath.Clean(b.pos.File))),
			cmp.Compare(a.pos.Line, b.pos.Line),
			cmp.Compare(a.pos.Col, b.pos.Col),
		)
	})
	return fs
}

func printFindings(e *env, cmd string, fs []finding) {
	for _, f := range fs {
		if f.pos.IsValid() {
			fmt.Fprintln(e.stderr, f.text)
		} else {
			fmt.Fprintf(e.stderr, "toolreg %s: %s\n", cmd, f.text)
		}
	}
}

// finding is one line of a command's report.
type finding struct {
	pos  toolreg.Pos
	text string
	// problem is the finding's parts, for a machine; its Message is empty
	// for an error that is not a problem, which text says whole.
	problem toolreg.Problem
}

func findings(out []finding, err error) []finding {
	if multi, ok := err.(interface{ Unwrap() []error }); ok {
		for _, err := range multi.Unwrap() {
			out = findings(out, err)
		}
		return out
	}
	var def *toolreg.ToolDefinitionError
	var dup *toolreg.DuplicateToolError
	switch {
	case errors.As(err, &def) && len(def.Problems) > 0:
		for _, p := range def.Problems {
			out = append(out, problemFinding(p))
		}
	case errors.As(err, &dup):
		out = append(out, problemFinding(duplicateProblem(dup)))
	default:
		out = append(out, finding{text: err.Error()})
	}
	return out
}

// problemFinding renders p as file:line:col: tool: path: message; a problem
// with no file (a tool built in Go) leaves the position out rather than
// printing a placeholder.
func problemFinding(p toolreg.Problem) finding {
	if p.Pos.IsValid() {
		return finding{p.Pos, p.String(), p}
	}
	var parts []string
	for _, s := range []string{p.Tool, p.Path, p.Message} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return finding{text: strings.Join(parts, ": "), problem: p}
}

// duplicateProblem restates a duplicate as a finding at its second
// declaration, pointing at the first.
func duplicateProblem(dup *toolreg.DuplicateToolError) toolreg.Problem {
	msg := fmt.Sprintf("tool %q is already declared at %s: rename one or remove it", dup.Name, dup.First)
	if !dup.First.IsValid() {
		msg = fmt.Sprintf("tool %q is declared twice: rename one or remove it", dup.Name)
	}
	return toolreg.Problem{Pos: dup.Second, Tool: dup.Name, Path: "name", Message: msg}
}
