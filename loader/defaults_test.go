package loader_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/loader"
)

// A default found to fit its schema is remembered with that schema: the same
// schema with another default, or the same default under another bound, is
// still checked. The descriptions of the params differ, as a registry's do.
func TestEachDefaultIsCheckedAgainstItsOwnSchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const m = "name: t%d\ndescription: Tool %d.\nparams:\n  limit:\n    type: integer\n    description: Limit of tool %d.\n    minimum: 1\n    maximum: %d\n    default: %s\n"
	for i, c := range []struct {
		max int
		def string
	}{{10, "5"}, {10, "5"}, {10, "11"}, {4, "5"}, {10, "5.0"}, {10, "0"}} {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("t%d.yaml", i)), fmt.Appendf(nil, m, i, i, i, c.max, c.def), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := loader.Load(dir)
	if err == nil {
		t.Fatal("no error: the defaults outside their bounds were accepted")
	}
	got := err.Error()
	for _, want := range []string{
		"t2.yaml:9:5: t2: params.limit.default: default 11 does not satisfy its own param",
		"t3.yaml:9:5: t3: params.limit.default: default 5 does not satisfy its own param",
		"t5.yaml:9:5: t5: params.limit.default: default 0 does not satisfy its own param",
		"t4.yaml:9:5: t4: params.limit.default: got a number 5.0, want an integer",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	for _, ok := range []string{"t0.yaml", "t1.yaml"} {
		if strings.Contains(got, ok) {
			t.Errorf("%s has a default that fits, and is reported:\n%s", ok, got)
		}
	}
}
