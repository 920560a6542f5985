package bindingstest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/loader"
)

// Check loads the manifests at path (a directory, searched recursively, or a
// file, as loader.Load takes it; relative to the test's package directory),
// calls bind on a Binder for them, made with opts, and binds. It fails t with
// every problem, one a line with its place: each invalid manifest, or each
// mismatch the binder finds (a param whose Go type disagrees, a tool with no
// function, a function that names no tool). When all binds, it returns the
// bound tables, for the test to look further.
//
// Remote tools (manifests with remote:) need no binding here: their servers
// are checked when the service starts (package remote), and Check binds with
// bindings.WithoutRemote, so their contracts are in the tables with no call.
func Check(t testing.TB, path string, bind func(*bindings.Binder), opts ...bindings.Option) *bindings.Bound {
	t.Helper()
	specs, err := loader.Load(path)
	if err != nil {
		t.Fatalf("bindingstest: the manifests in %s do not load:\n%s", path, problems(err))
		return nil
	}
	if len(specs) == 0 {
		t.Fatalf("bindingstest: no manifests (.yaml, .yml or .cue files) in %s: name the directory that holds them, relative to the test's package", path)
		return nil
	}
	b := bindings.New(specs, append([]bindings.Option{bindings.WithoutRemote()}, opts...)...)
	bind(b)
	bound, err := b.Bind()
	if err != nil {
		t.Fatalf("bindingstest: the functions do not bind to the manifests in %s:\n%s", path, problems(err))
		return nil
	}
	return bound
}

// problems lists every problem err holds, one a line, indented.
func problems(err error) string {
	var lines []string
	var walk func(error)
	walk = func(err error) {
		if multi, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range multi.Unwrap() {
				walk(e)
			}
			return
		}
		var def *toolreg.ToolDefinitionError
		if errors.As(err, &def) && len(def.Problems) > 0 {
			for _, p := range def.Problems {
				lines = append(lines, p.String())
			}
			return
		}
		lines = append(lines, err.Error())
	}
	walk(err)
	n := "1 problem"
	if len(lines) != 1 {
		n = fmt.Sprintf("%d problems", len(lines))
	}
	return "\t" + strings.Join(lines, "\n\t") + "\n(" + n + ")"
}
