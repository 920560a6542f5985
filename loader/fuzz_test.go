package loader_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
)

// seeds adds every manifest of the corpus and of manifests/ with the given
// extension to f's seed corpus, so go test runs them as unit tests.
func seeds(f *testing.F, exts ...string) {
	for _, glob := range []string{"testdata/manifests/*/*", "testdata/manifests/*/*/*", "testdata/hostile/*", "../manifests/*"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range files {
			for _, ext := range exts {
				if filepath.Ext(name) == ext {
					b, err := os.ReadFile(name)
					if err != nil {
						f.Fatal(err)
					}
					f.Add(b)
				}
			}
		}
	}
}

// checkLoad loads data as the file name and checks what must hold for any
// input: no panic, and either specs that are whole and point into the file,
// or an error whose every problem names the file.
func checkLoad(t *testing.T, name string, data []byte) {
	specs, err := loader.LoadFS(fstest.MapFS{name: {Data: data}}, name)
	if err != nil {
		if specs != nil {
			t.Errorf("got %d specs with an error", len(specs))
		}
		var tde *toolreg.ToolDefinitionError
		var dup *toolreg.DuplicateToolError
		switch {
		case errors.As(err, &tde):
			if len(tde.Problems) == 0 {
				t.Errorf("ToolDefinitionError without problems")
			}
			seen := map[string]bool{}
			for i, p := range tde.Problems {
				if p.Pos.File != name || p.Message == "" {
					t.Errorf("problem does not name %s or says nothing: %s", name, p)
				}
				if seen[p.String()] {
					t.Errorf("problem reported twice: %s", p)
				}
				seen[p.String()] = true
				if i > 0 {
					prev := tde.Problems[i-1].Pos
					if prev.Line > p.Pos.Line || prev.Line == p.Pos.Line && prev.Col > p.Pos.Col {
						t.Errorf("problems out of order: %s before %s", tde.Problems[i-1], p)
					}
				}
				if len(p.Message) > 1100 {
					t.Errorf("message of %d bytes: a message quotes only a short excerpt", len(p.Message))
				}
			}
		case errors.As(err, &dup):
		default:
			t.Fatalf("error of type %T: %v", err, err)
		}
		if errors.As(err, &dup) && (dup.First.File != name || dup.Second.File != name) {
			t.Errorf("duplicate does not name %s at both places: %v", name, dup)
		}
		return
	}
	for _, s := range specs {
		if s.Pos.File != name || s.Pos.Line == 0 {
			t.Errorf("tool %q: position %s is not in %s", s.Name, s.Pos, name)
		}
		if err := s.Validate(); err != nil {
			t.Errorf("loaded spec fails toolreg.Spec.Validate: %v", err)
		}
		if !json.Valid(toolreg.NewTool(s).Schema()) {
			t.Errorf("tool %q: schema is not valid JSON: %s", s.Name, toolreg.NewTool(s).Schema())
		}
	}
}

func FuzzLoadYAML(f *testing.F) {
	seeds(f, ".yaml", ".yml")
	f.Add([]byte(aliasBomb()))
	f.Add([]byte("name: a\ndescription: b\n---\nname: a\ndescription: b\n"))
	f.Add([]byte("name: a\ndescription: b\nparams:\n  \"#x\": {type: string}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLoad(t, "m.yaml", data)
	})
}

func FuzzLoadCUE(f *testing.F) {
	seeds(f, ".cue")
	f.Add([]byte("package toolreg\ntools: a: {description: \"b\", params: x: type: \"string\"}\n"))
	f.Add([]byte("package toolreg\n#T: tools.a\ntools: a: description: \"b\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLoad(t, "m.cue", data)
	})
}
