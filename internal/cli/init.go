package cli

import (
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/beam-agents/toolreg"
)

var (
	//go:embed initdata/lookup_customer.yaml
	initManifest string
	//go:embed initdata/workflow.yml
	initWorkflowTemplate string
	//go:embed initdata/bindings_test.go.txt
	initBindingsTest string
)

// defaultAcceptLabel is the label init's workflow accepts breaking and safety
// changes with, unless -accept-label names another.
const defaultAcceptLabel = "contract-change"

// initWorkflow is the workflow init writes, accepting changes with label.
func initWorkflow(label string) string {
	return strings.ReplaceAll(initWorkflowTemplate, "@ACCEPT_LABEL@", label)
}

// labelName is what -accept-label takes: a GitHub label (at most 50
// characters) that the workflow can pass through -labels, which separates
// labels with commas, and write in a double-quoted YAML string where no '$'
// starts a ${{ }} expression.
var labelName = regexp.MustCompile(`^[^\x00-\x1f\x7f",\\@$]{1,50}$`)

// cueModulePath is what a CUE module path may be: lowercase host and path
// elements, as cue mod init accepts them.
var cueModulePath = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*\.[a-z]+(/[a-z0-9][a-z0-9._-]*)*$`)

var initCommand = &command{
	name:  "init",
	args:  "[dir]",
	short: "set up a repository to vet, diff and bind its manifests in pull requests",
	long: `Init writes into dir (default: the current directory), which should be the
root of your repository (a Go module that requires toolreg), what it needs to
check tool manifests in pull requests:

	schema.cue                       the manifest schema (CUE package toolreg)
	schema.json                      its JSON Schema, for editors (toolreg schema -manifest)
	cue.mod/module.cue               makes dir a CUE module, so cue vet ./... works
	manifests/lookup_customer.yaml   an example manifest to edit or replace; its first
	                                 line points the YAML language server at schema.json
	manifests/bindings_test.go       the binding check: binds your functions to the
	                                 manifests (edit its bind function to call yours)
	.github/workflows/manifests.yml  the CI job: cue vet, toolreg vet with annotations,
	                                 toolreg diff against the base with a summary, a
	                                 comment and a label gate, and the binding check

It never overwrites: a file that is there already is left as it is, and
init says so (and whether it differs from what init would write); it writes
only the files that are missing. Run again, it changes nothing. The CI job
runs the cue and toolreg commands pinned in your go.mod as tools; init
prints the go get -tool commands that pin them.

-accept-label names the pull request label that lets a breaking or safety
change pass the diff step (the job fails on one otherwise).
`,
	setup: func(fs *flag.FlagSet) func(*env, []string) int {
		module := fs.String("module", "example.com/tools", "the CUE module `path` written in cue.mod/module.cue (nothing imports it; lowercase, with a dot in its first element)")
		label := fs.String("accept-label", defaultAcceptLabel, "the pull request `label` that accepts breaking and safety changes in the workflow")
		return func(e *env, args []string) int {
			if len(args) > 1 {
				fmt.Fprintln(e.stderr, "usage: toolreg init [-accept-label label] [-module path] [dir]\nRun 'toolreg init --help' for details.")
				return exitUsage
			}
			if !cueModulePath.MatchString(*module) {
				fmt.Fprintf(e.stderr, "toolreg init: -module %q is not a CUE module path: write it as a lowercase domain and path, such as example.com/tools\n", *module)
				return exitUsage
			}
			if !labelName.MatchString(*label) {
				fmt.Fprintf(e.stderr, "toolreg init: -accept-label %q is not a label the workflow can pass on: use 1 to 50 characters, with no comma, quote, backslash, @, $ or control character\n", *label)
				return exitUsage
			}
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return runInit(e, dir, *module, *label)
		}
	},
}

// initFiles returns what init writes, by path relative to dir, in the order
// it writes them.
func initFiles(module, label string) []struct{ path, text string } {
	return []struct{ path, text string }{
		{"schema.cue", toolreg.SchemaCUE()},
		{"schema.json", toolreg.SchemaJSON()},
		{filepath.Join("cue.mod", "module.cue"), fmt.Sprintf("module: %q\nlanguage: {\n\tversion: \"v0.17.0\"\n}\n", module)},
		{filepath.Join("manifests", "lookup_customer.yaml"), initManifest},
		{filepath.Join("manifests", "bindings_test.go"), initBindingsTest},
		{filepath.Join(".github", "workflows", "manifests.yml"), initWorkflow(label)},
	}
}

func runInit(e *env, dir, module, label string) int {
	wrote := 0
	for _, f := range initFiles(module, label) {
		p := filepath.Join(dir, f.path)
		have, err := os.ReadFile(p)
		switch {
		case err == nil && string(have) == f.text:
			fmt.Fprintf(e.stdout, "kept %s: it is what init writes\n", p)
			continue
		case err == nil:
			fmt.Fprintf(e.stdout, "kept %s: it is there already, and differs from what this init writes; left as it is\n", p)
			continue
		case errors.Is(err, fs.ErrNotExist):
		default:
			// A directory where a file goes, or one that cannot be read: say
			// so, and go on with the others.
			if fi, serr := os.Stat(p); serr == nil && fi.IsDir() {
				err = fmt.Errorf("%s is a directory: init writes a file there; move it away", p)
			}
			fmt.Fprintf(e.stderr, "toolreg init: %v\n", err)
			return exitFindings
		}
		if err := writeNew(p, f.text); err != nil {
			fmt.Fprintf(e.stderr, "toolreg init: %v\n", err)
			return exitFindings
		}
		fmt.Fprintf(e.stdout, "wrote %s\n", p)
		wrote++
	}
	if wrote == 0 {
		fmt.Fprintln(e.stdout, "\nNothing to write: every file init writes is there.")
		return exitOK
	}
	bi, _ := debug.ReadBuildInfo()
	v := moduleVersion(bi)
	if v == "devel" {
		v = "latest"
	}
	fmt.Fprintf(e.stdout, `
Next, require toolreg and pin the two commands the CI job runs, in your go.mod:

	go get %[1]s@%[2]s
	go get -tool cuelang.org/go/cmd/cue@v0.17.1
	go get -tool %[1]s/cmd/toolreg@%[2]s

make bind in manifests/bindings_test.go call the function your service binds
its tools with, then check the manifests as CI will:

	go tool cue vet -c ./...
	go tool cue vet -c -d '#Tool' schema.cue manifests/*.yaml
	go tool toolreg vet ./manifests
	go tool toolreg diff main
	go test ./manifests

A breaking or safety change fails the CI job unless the pull request has the
label %[3]q.
`, modulePath, v, label)
	return exitOK
}

// writeNew creates path, and the directories above it, with text; it fails
// rather than replace a file that appeared since init looked.
func writeNew(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
