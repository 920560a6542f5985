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
	if len(paths) == 0 {
		paths = defaultPaths
	}
	specs, err := loader.Load(paths...)
	if err != nil {
		reportErr(e, cmd, err)
		return nil, false
	}
	if len(specs) == 0 {
		// A CI job vetting a mistyped directory must not pass by vetting nothing.
		fmt.Fprintf(e.stderr, "toolreg %s: no manifests (.yaml, .yml or .cue files) in %q: name the files or directories that hold them\n", cmd, paths)
		return nil, false
	}
	return specs, true
}

// reportErr writes err to stderr as findings, one a line, sorted by position:
// every problem of a *toolreg.ToolDefinitionError, every
// *toolreg.DuplicateToolError, and any other error as it says itself.
func reportErr(e *env, cmd string, err error) {
	fs := findings(nil, err)
	slices.SortStableFunc(fs, func(a, b finding) int {
		return cmp.Or(
			// As the loader orders files: by their cleaned paths.
			cmp.Compare(filepath.ToSlash(filepath.Clean(a.pos.File)), filepath.ToSlash(filepath.Clean(b.pos.File))),
			cmp.Compare(a.pos.Line, b.pos.Line),
			cmp.Compare(a.pos.Col, b.pos.Col),
		)
	})
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
		return finding{p.Pos, p.String()}
	}
	var parts []string
	for _, s := range []string{p.Tool, p.Path, p.Message} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return finding{text: strings.Join(parts, ": ")}
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
