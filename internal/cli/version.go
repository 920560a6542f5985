package cli

import (
	"flag"
	"fmt"
	"runtime/debug"
)

// modulePath is the module whose version toolreg version prints.
const modulePath = "github.com/beam-agents/toolreg"

var versionCommand = &command{
	name:  "version",
	short: "print the version of toolreg",
	long: `Version prints the version of the toolreg module this command was built
from, as the go command recorded it: the tag (v0.3.0) or pseudo-version of a
build from the module cache, such as a tool pinned with 'go get -tool', and
"devel" for a build from a checkout of toolreg itself.
`,
	setup: func(fs *flag.FlagSet) func(*env, []string) int {
		return func(e *env, args []string) int {
			if len(args) > 0 {
				fmt.Fprintln(e.stderr, "usage: toolreg version\nRun 'toolreg version --help' for details.")
				return exitUsage
			}
			bi, _ := debug.ReadBuildInfo()
			fmt.Fprintf(e.stdout, "toolreg %s\n", moduleVersion(bi))
			return exitOK
		}
	},
}

// moduleVersion returns the version of toolreg's module in bi: the main
// module when toolreg is built from its own checkout or installed with go
// install, a dependency when another module pins it as a tool. A replaced
// module reports its replacement's version. "devel" stands for a checkout,
// and for a binary without build information.
func moduleVersion(bi *debug.BuildInfo) string {
	if bi == nil {
		return "devel"
	}
	m := &bi.Main
	if m.Path != modulePath {
		m = nil
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				m = d
				break
			}
		}
	}
	if m == nil {
		return "devel"
	}
	if m.Replace != nil {
		m = m.Replace
	}
	if m.Version == "" || m.Version == "(devel)" {
		return "devel"
	}
	return m.Version
}
