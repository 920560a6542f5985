package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing/fstest"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/diff"
	"github.com/beam-agents/toolreg/internal/diag"
	"github.com/beam-agents/toolreg/loader"
)

var diffCommand = &command{
	name:  "diff",
	args:  "OLD [NEW]",
	short: "classify the changes between two manifest sets as breaking, safety or compatible",
	long: `Diff compares two sets of tool manifests and classifies each change:

	breaking    a tool removed or renamed, a param removed, a new required
	            param, a type changed, an enum value removed, a constraint
	            tightened, a default changed, strict turned on
	safety      side_effect flipped either way (true to false moves an effect
	            into the inline path, where a retry repeats it)
	compatible  a new tool, a new optional param, a description edit, a
	            constraint loosened, strict turned off

OLD and NEW are each a manifest directory or file, or a git revision: a name
that is not a path is read with git, as the -dir directory at that revision.
NEW defaults to the -dir directory in the working tree, so in a pull request

	toolreg diff origin/main

compares the manifests at origin/main with the ones being proposed.

-format chooses the output on stdout: text (the default), markdown (a
table for a pull request comment or a job summary), or one of the machine
formats: github (a workflow command a change, an annotation on the line of
the manifest that has it: an error for a breaking or safety change, a notice
for a compatible one), sarif (a SARIF 2.1.0 log, rules "breaking", "safety"
and "compatible"), jsonl (one JSON object a change).

A team that merges a breaking or safety change on purpose says so with a
label on the pull request. -accept-label names that label and -labels lists
the labels the pull request carries (comma-separated; the workflow toolreg
init writes passes them from the pull request's event). When the label is
among them, such changes are reported as accepted and the exit status is 0;
when it is not, the markdown says which label accepts them:

	toolreg diff -accept-label contract-change -labels contract-change origin/main

The exit status is 0 when every change is compatible (or there is none, or
-accept-label's label accepts them), 1 when any change is breaking or a
safety change, and 2 when the sets could not be compared.
`,
	setup: func(fs *flag.FlagSet) func(*env, []string) int {
		format := outputFlag(fs, "text", "markdown")
		dir := fs.String("dir", "manifests", "the manifest `directory`, in the working tree and at a git revision")
		acceptLabel := fs.String("accept-label", "", "the pull request `label` that accepts breaking and safety changes (none when empty)")
		labels := fs.String("labels", "", "the `labels` the pull request carries, comma-separated, for -accept-label")
		return func(e *env, args []string) int {
			if len(args) < 1 || len(args) > 2 {
				fmt.Fprintf(e.stderr, "toolreg diff: got %d arguments, want OLD and at most NEW: each a manifest directory, a file or a git revision\nRun 'toolreg diff --help' for details.\n", len(args))
				return exitUsage
			}
			if !checkFormat(e, "diff", *format, "text", "markdown") {
				return exitUsage
			}
			if *labels != "" && *acceptLabel == "" {
				fmt.Fprintln(e.stderr, "toolreg diff: -labels is read only with -accept-label: name the label that accepts breaking and safety changes")
				return exitUsage
			}
			newArg := *dir
			if len(args) == 2 {
				newArg = args[1]
			}
			old, err := loadSide(args[0], *dir)
			if err != nil {
				reportErr(e, "diff", err)
				return exitUsage
			}
			cur, err := loadSide(newArg, *dir)
			if err != nil {
				reportErr(e, "diff", err)
				return exitUsage
			}
			r := diff.Compare(old, cur)
			gated := false
			if w, any := r.Worst(); any && w != diff.Compatible {
				gated = true
			}
			accepted := gated && *acceptLabel != "" && slices.Contains(splitLabels(*labels), *acceptLabel)
			err = nil
			switch *format {
			case "text":
				err = r.WriteText(e.stdout)
				if err == nil && accepted {
					_, err = fmt.Fprintf(e.stdout, "accepted by the pull request's label %q\n", *acceptLabel)
				}
			case "markdown":
				err = r.WriteMarkdown(e.stdout)
				if err == nil && gated && *acceptLabel != "" {
					err = writeGate(e.stdout, *acceptLabel, accepted)
				}
			default:
				if !writeDiags(e, "diff", diag.Format(*format), diffTool, changeDiags(r, cur, args[0]+":")) {
					return exitUsage
				}
			}
			if err != nil {
				fmt.Fprintf(e.stderr, "toolreg diff: %v\n", err)
				return exitUsage
			}
			if gated && !accepted {
				return exitFindings
			}
			return exitOK
		}
	},
}

// diffTool is toolreg diff to a machine: one rule a class of change.
var diffTool = diagTool("diff",
	diag.Rule{ID: diff.Safety.String(), Description: "A change to where a tool runs (side_effect flipped, approval removed): review it before it merges."},
	diag.Rule{ID: diff.Breaking.String(), Description: "A change that makes existing calls, callers or consumers of a tool fail."},
	diag.Rule{ID: diff.Compatible.String(), Description: "A change existing calls and consumers keep working with."},
)

// changeDiags places each change of r for a machine: where the new manifests
// say it, or, for what was removed, at the tool in the new manifests (the
// line a reviewer can comment on), or, for a removed tool, in the old file
// named without the revision prefix oldRev ("origin/main:") that names it.
func changeDiags(r *diff.Report, cur []*toolreg.Spec, oldRev string) []diag.Diagnostic {
	byName := make(map[string]*toolreg.Spec, len(cur))
	for _, s := range cur {
		byName[s.Name] = s
	}
	ds := make([]diag.Diagnostic, 0, len(r.Changes))
	for _, c := range r.Changes {
		pos := c.New
		if !pos.IsValid() {
			if s, ok := byName[c.Tool]; ok {
				pos = s.Pos
			} else {
				pos = c.Old
				pos.File = strings.TrimPrefix(pos.File, oldRev)
			}
		}
		sev := diag.Error
		if c.Class == diff.Compatible {
			sev = diag.Note
		}
		d := diagnostic(sev, c.Class.String(), pos, c.Tool, c.Path, c.Message)
		d.Title = c.Class.String() + " change: " + d.Title
		ds = append(ds, d)
	}
	return ds
}

// writeGate says under the markdown table whether the pull request's label
// accepts its breaking and safety changes.
func writeGate(w io.Writer, label string, accepted bool) error {
	var err error
	if accepted {
		_, err = fmt.Fprintf(w, "\nAccepted: the pull request carries the label `%s`.\n", label)
	} else {
		_, err = fmt.Fprintf(w, "\nThese changes fail the check. To merge them on purpose, add the label `%s` to the pull request.\n", label)
	}
	return err
}

// splitLabels splits a comma-separated list of labels, trimming each.
func splitLabels(s string) []string {
	var out []string
	for _, l := range strings.Split(s, ",") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// loadSide loads one side of a diff: a path in the working tree if it exists,
// else the manifest directory dir at git revision arg.
func loadSide(arg, dir string) ([]*toolreg.Spec, error) {
	if _, err := os.Stat(arg); err == nil {
		specs, err := loader.Load(arg)
		if err == nil && len(specs) == 0 {
			// As at a revision: a mistyped OLD would make every tool new, and pass.
			return nil, fmt.Errorf("no manifests (.yaml, .yml or .cue files) in %s: name the directory that holds them", arg)
		}
		return specs, err
	}
	fsys, root, err := gitTree(arg, dir)
	if err != nil {
		return nil, err
	}
	return loader.LoadFS(fsys, root)
}

// gitTree reads the manifest files under dir at revision rev into memory.
// Their names keep the revision ("origin/main:manifests/refund.yaml"), so a
// finding says which side it comes from.
func gitTree(rev, dir string) (fstest.MapFS, string, error) {
	if strings.HasPrefix(rev, "-") {
		return nil, "", fmt.Errorf("%q is not a path or a git revision", rev)
	}
	if _, err := git("rev-parse", "--verify", "--quiet", rev+"^{commit}"); err != nil {
		return nil, "", fmt.Errorf("%q is neither a manifest path nor a git revision", rev)
	}
	list, err := git("ls-tree", "-r", "-z", "--full-name", "--name-only", rev, "--", dir)
	if err != nil {
		return nil, "", err
	}
	root := rev + ":" + strings.TrimSuffix(path.Clean(dirFull(dir)), "/")
	fsys := fstest.MapFS{}
	for _, name := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		if name == "" || !manifestFile(name) {
			continue
		}
		data, err := git("cat-file", "blob", rev+":"+name)
		if err != nil {
			return nil, "", err
		}
		fsys[rev+":"+name] = &fstest.MapFile{Data: data}
	}
	if len(fsys) == 0 {
		return nil, "", fmt.Errorf("no manifests (.yaml, .yml or .cue files) under %s at %s: name the directory that holds them with -dir", dir, rev)
	}
	return fsys, root, nil
}

// dirFull is dir relative to the repository's top, as git ls-tree --full-name
// prints paths.
func dirFull(dir string) string {
	prefix, err := git("rev-parse", "--show-prefix")
	if err != nil {
		return dir
	}
	return path.Join(strings.TrimSpace(string(prefix)), dir)
}

func manifestFile(name string) bool {
	switch path.Ext(name) {
	case ".yaml", ".yml", ".cue":
		return true
	}
	return false
}

func git(args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && stderr.Len() > 0 {
			return nil, fmt.Errorf("git %s: %s", strings.Join(args, " "), strings.TrimSpace(stderr.String()))
		}
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}
