package loader_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
)

// roundTrip writes each spec with MarshalYAML and loads it back: what Load
// reads is the Spec that was written, Pos aside.
func roundTrip(t *testing.T, specs []*toolreg.Spec) {
	t.Helper()
	for _, s := range specs {
		b, err := loader.MarshalYAML(s, "written by a test\nsecond line")
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		back, err := loader.LoadFS(fstest.MapFS{"t.yaml": {Data: b}}, "t.yaml")
		if err != nil {
			t.Fatalf("%s: written as\n%s\nit does not load: %v", s.Name, b, err)
		}
		if len(back) != 1 {
			t.Fatalf("%s: loaded %d tools", s.Name, len(back))
		}
		if diff := cmp.Diff(s, back[0], cmpopts.IgnoreTypes(toolreg.Pos{}), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: written as\n%s\nit loads back otherwise (-want +got):\n%s", s.Name, b, diff)
		}
		if !strings.HasPrefix(string(b), "# written by a test\n# second line\n") {
			t.Errorf("%s: the header is not the first lines:\n%s", s.Name, b)
		}
	}
}

// Every good manifest of the corpus and of manifests/, in both formats,
// written as YAML reads back as itself.
func TestMarshalYAMLRoundTripsTheCorpus(t *testing.T) {
	t.Parallel()
	var paths []string
	for _, glob := range []string{filepath.Join(corpus, "good", "*"), "../manifests"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	n := 0
	for _, p := range paths {
		specs, err := loader.Load(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		roundTrip(t, specs)
		n += len(specs)
	}
	if n < 20 {
		t.Fatalf("only %d tools round-tripped", n)
	}
}

// Strings YAML would read as something else, multi-line descriptions and
// numbers beyond float64's digits come back as written.
func TestMarshalYAMLKeepsHardValues(t *testing.T) {
	t.Parallel()
	six := 6
	spec := &toolreg.Spec{
		Name:        "hard",
		Description: "Line one.\nLine two: with a colon, # and a hash.\n\n- a list item, not a list",
		SideEffect:  true,
		Remote:      &toolreg.Remote{Server: "s.1", Tool: "a/b.c", Title: "yes", ReadOnlyHint: true},
		Params: []*toolreg.Param{
			{Name: "z", Schema: toolreg.Schema{Type: toolreg.TypeString, Enum: []any{"yes", "no", "null", "1e3", "0x10", "", " x", "on"}}},
			{Name: "a", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Maximum: "9007199254740993", Default: jsonNumber("7"), HasDefault: true}},
			{Name: "m", Optional: true, Schema: toolreg.Schema{Type: toolreg.TypeNumber, MultipleOf: "0.01", ExclusiveMinimum: "-1e-7"}},
			{Name: "tabbed", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "a\ttab\r\nand a trailing space \nhere", MaxLength: &six, Pattern: `^[a-z]+\d$`}},
			{Name: "obj", Optional: true, Schema: toolreg.Schema{Type: toolreg.TypeObject, Default: map[string]any{"k": []any{"a", "yes"}}, HasDefault: true,
				AdditionalProperties: &toolreg.Schema{Type: toolreg.TypeArray, Items: &toolreg.Schema{Type: toolreg.TypeString}}}},
		},
	}
	spec.Params[4].Optional = false // a default makes it optional; required: false is not written
	roundTrip(t, []*toolreg.Spec{spec})
}

func jsonNumber(s string) any { return jsonNum(s) }

// FuzzMarshalYAMLRoundTrips: whatever manifest loads, written as YAML, loads
// back as the same Spec.
func FuzzMarshalYAMLRoundTrips(f *testing.F) {
	seeds(f, ".yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		specs, err := loader.LoadFS(fstest.MapFS{"f.yaml": {Data: data}}, "f.yaml")
		if err != nil {
			return
		}
		roundTrip(t, specs)
	})
}

func TestMarshalYAMLWritesTheExampleInItsOrder(t *testing.T) {
	t.Parallel()
	specs, err := loader.Load(filepath.Join(corpus, "good", "remote.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := loader.MarshalYAML(specs[0], "")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "golden", "write_remote.yaml"))
	if err != nil || *update {
		if err := os.WriteFile(filepath.Join("testdata", "golden", "write_remote.yaml"), got, 0o644); err != nil {
			t.Fatal(err)
		}
		want = got
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

type jsonNum = json.Number
