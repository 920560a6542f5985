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

	"github.com/beam-agents/toolreg"
)

var (
	//go:embed initdata/lookup_customer.yaml
	initManifest string
	//go:embed initdata/workflow.yml
	initWorkflow string
)

// cueModulePath is what a CUE module path may be: lowercase host and path
// elements, as cue mod init accepts them.
var cueModulePath = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*\.[a-z]+(/[a-z0-9][a-z0-9._-]*)*$`)

var initCommand = &command{
	name:  "init",
	args:  "[dir]",
	short: "set up a repository to vet its manifests",
	long: `Init writes into dir (default: the current directory), which should be the
root of your repository, what it needs to vet tool manifests with the real
cue vet as well as with toolreg vet:

	schema.cue                       the manifest schema (CUE package toolreg)
	cue.mod/module.cue               makes dir a CUE module, so cue vet ./... works
	manifests/lookup_customer.yaml   an example manifest to edit or replace
	.github/workflows/manifests.yml  the CI job that vets manifests on a PR

It never overwrites: if any of these files exists, it writes none of them,
names each, and exits 1. The CI job runs the cue and toolreg commands pinned
in your go.mod as tools; init prints the two go get -tool commands that pin
them.
`,
	setup: func(fs *flag.FlagSet) func(*env, []string) int {
		module := fs.String("module", "example.com/tools", "the CUE module `path` written in cue.mod/module.cue (nothing imports it; lowercase, with a dot in its first element)")
		return func(e *env, args []string) int {
			if len(args) > 1 {
				fmt.Fprintln(e.stderr, "usage: toolreg init [-module path] [dir]\nRun 'toolreg init --help' for details.")
				return exitUsage
			}
			if !cueModulePath.MatchString(*module) {
				fmt.Fprintf(e.stderr, "toolreg init: -module %q is not a CUE module path: write it as a lowercase domain and path, such as example.com/tools\n", *module)
				return exitUsage
			}
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return runInit(e, dir, *module)
		}
	},
}

// initFiles returns what init writes, by path relative to dir, in the order
// it writes them.
func initFiles(module string) []struct{ path, text string } {
	return []struct{ path, text string }{
		{"schema.cue", toolreg.SchemaCUE()},
		{filepath.Join("cue.mod", "module.cue"), fmt.Sprintf("module: %q\nlanguage: {\n\tversion: \"v0.17.0\"\n}\n", module)},
		{filepath.Join("manifests", "lookup_customer.yaml"), initManifest},
		{filepath.Join(".github", "workflows", "manifests.yml"), initWorkflow},
	}
}

func runInit(e *env, dir, module string) int {
	files := initFiles(module)
	var exist []string
	for _, f := range files {
		p := filepath.Join(dir, f.path)
		if _, err := os.Lstat(p); err == nil {
			exist = append(exist, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(e.stderr, "toolreg init: %v\n", err)
			return exitFindings
		}
	}
	if len(exist) > 0 {
		for _, p := range exist {
			fmt.Fprintf(e.stderr, "toolreg init: %s already exists: init writes only new files; move it away or init another directory\n", p)
		}
		fmt.Fprintln(e.stderr, "toolreg init: wrote nothing")
		return exitFindings
	}
	for _, f := range files {
		p := filepath.Join(dir, f.path)
		if err := writeNew(p, f.text); err != nil {
			fmt.Fprintf(e.stderr, "toolreg init: %v\n", err)
			return exitFindings
		}
		fmt.Fprintf(e.stdout, "wrote %s\n", p)
	}
	bi, _ := debug.ReadBuildInfo()
	v := moduleVersion(bi)
	if v == "devel" {
		v = "latest"
	}
	fmt.Fprintf(e.stdout, `
Next, pin the two commands the CI job runs, in your go.mod:

	go get -tool cuelang.org/go/cmd/cue@v0.17.1
	go get -tool %s/cmd/toolreg@%s

then vet the manifests as CI will:

	go tool cue vet -c ./...
	go tool cue vet -c -d '#Tool' schema.cue manifests/*.yaml
	go tool toolreg vet ./manifests
`, modulePath, v)
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
