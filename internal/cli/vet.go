package cli

import (
	"flag"
	"fmt"
)

var vetCommand = &command{
	name:  "vet",
	args:  "[paths...]",
	short: "check manifests against schema.cue and report every problem",
	long: `Vet loads the tool manifests in paths, validates each one against schema.cue
(the schema 'cue vet' checks in CI, embedded in toolreg), and reports every
problem it finds, one a line, on stderr:

	file:line:col: tool: path: message

It reports every invalid document of every file, not only the first, and a
tool name declared in two places. It prints nothing when all is well.

Paths are manifest files or directories, searched recursively for .yaml, .yml
and .cue files; the default is ./manifests. A YAML file holds one tool per
document; a CUE file declares tools under a top-level 'tools' struct.

The exit status is 0 when the manifests are valid, 1 when vet reports
anything, and 2 on a usage error.
`,
	setup: func(fs *flag.FlagSet) func(*env, []string) int {
		verbose := fs.Bool("v", false, "print each valid tool on stdout, with its position")
		return func(e *env, paths []string) int {
			specs, ok := loadSpecs(e, "vet", paths)
			if !ok {
				return exitFindings
			}
			if *verbose {
				for _, s := range specs {
					kind := "read-only"
					if s.SideEffect {
						kind = "side effect"
					}
					params := "params"
					if len(s.Params) == 1 {
						params = "param"
					}
					fmt.Fprintf(e.stdout, "%s: %s: ok (%s, %d %s)\n", s.Pos, s.Name, kind, len(s.Params), params)
				}
			}
			return exitOK
		}
	},
}
