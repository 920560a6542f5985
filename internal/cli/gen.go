package cli

import (
	"flag"
	"fmt"
	"go/token"
	"os"
	"path/filepath"
	"strings"

	"github.com/beam-agents/toolreg/gen"
)

var genCommand = &command{
	name:  "gen",
	args:  "[paths...]",
	short: "generate Go argument structs and binding helpers from manifests",
	long: `Gen generates, from the tool manifests in paths, the Go argument struct of
each tool (json tags, doc comments from descriptions, pointer fields for
optional params without defaults, named types for enums with their constants)
and a typed binding helper per tool, Bind<Tool>, which binds a function with
bindings.ReadOnly or bindings.Effect as the manifest's side_effect says.
Generated code always binds without a ToolDefinitionError.

It works as a go:generate line:

	//go:generate go run github.com/beam-agents/toolreg/cmd/toolreg gen -pkg tools -o tools_gen.go ../manifests

The default path is ./manifests; the default output is stdout. The exit status
is 0 on success, 1 when the manifests are invalid or hold a shape with no Go
type, and 2 on a usage error.
`,
	setup: func(fs *flag.FlagSet) func(*env, []string) int {
		pkg := fs.String("pkg", "tools", "the generated file's package `name`")
		out := fs.String("o", "-", "write to `file` instead of stdout")
		return func(e *env, paths []string) int {
			if !token.IsIdentifier(*pkg) {
				fmt.Fprintf(e.stderr, "toolreg gen: -pkg %q is not a Go identifier: use the name in the package clause of the directory the file goes in\n", *pkg)
				return exitUsage
			}
			specs, ok := loadSpecs(e, "gen", paths)
			if !ok {
				return exitFindings
			}
			if len(paths) == 0 {
				paths = defaultPaths
			}
			src, err := gen.Generate(specs, gen.Options{Package: *pkg, Source: strings.Join(slashed(paths), " ")})
			if err != nil {
				reportErr(e, "gen", err)
				return exitFindings
			}
			if *out == "-" {
				_, err = e.stdout.Write(src)
			} else {
				err = writeIfChanged(*out, src)
			}
			if err != nil {
				fmt.Fprintf(e.stderr, "toolreg gen: %v\n", err)
				return exitFindings
			}
			return exitOK
		}
	},
}

func slashed(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.ToSlash(filepath.Clean(p))
	}
	return out
}

// writeIfChanged writes data to name unless it already holds it, so that
// regenerating a clean tree touches nothing.
func writeIfChanged(name string, data []byte) error {
	if old, err := os.ReadFile(name); err == nil && string(old) == string(data) {
		return nil
	}
	return os.WriteFile(name, data, 0o644)
}
