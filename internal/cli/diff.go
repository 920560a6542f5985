package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"testing/fstest"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/diff"
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

The exit status is 0 when every change is compatible (or there is none), 1
when any change is breaking or a safety change, and 2 when the sets could not
be compared.
`,
	setup: func(fs *flag.FlagSet) func(*env, []string) int {
		format := fs.String("format", "text", "output `format`: text, or markdown for a pull request comment")
		dir := fs.String("dir", "manifests", "the manifest `directory`, in the working tree and at a git revision")
		return func(e *env, args []string) int {
			if len(args) < 1 || len(args) > 2 {
				fmt.Fprintf(e.stderr, "toolreg diff: got %d arguments, want OLD and at most NEW: each a manifest directory, a file or a git revision\nRun 'toolreg diff --help' for details.\n", len(args))
				return exitUsage
			}
			if *format != "text" && *format != "markdown" {
				fmt.Fprintf(e.stderr, "toolreg diff: unknown format %q: use text or markdown\n", *format)
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
			write := r.WriteText
			if *format == "markdown" {
				write = r.WriteMarkdown
			}
			if err := write(e.stdout); err != nil {
				fmt.Fprintf(e.stderr, "toolreg diff: %v\n", err)
				return exitUsage
			}
			if w, any := r.Worst(); any && w != diff.Compatible {
				return exitFindings
			}
			return exitOK
		}
	},
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
