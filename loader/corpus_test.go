package loader_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// The corpus: each entry of testdata/manifests/good and testdata/manifests/bad
// is one case, a manifest file or a directory of them.
const corpus = "testdata/manifests"

// loaderOnly names the bad cases that only the loader refuses, with the rule
// schema.cue cannot express that each breaks. Every other bad case must be
// refused by the real cue CLI too, and every good case accepted by both.
var loaderOnly = map[string]string{
	"default_below_minimum.yaml":  "a default satisfies its own param's constraints (minimum)",
	"default_not_in_enum.yaml":    "a default satisfies its own param's constraints (enum)",
	"default_breaks_pattern.yaml": "a default satisfies its own param's constraints (pattern)",
	"cue_default_below_minimum":   "a default satisfies its own param's constraints (minimum)",
	"object_untyped.yaml":         "an object param declares properties or additionalProperties",
	"returns_object_untyped.yaml": "an object result declares properties or additionalProperties",
	"approval_timeout_zero.yaml":  "approval_timeout is a positive duration a Go program can hold",
	"invalid_pattern.yaml":        "a pattern is a valid regular expression",
	"pattern_not_portable.yaml":   "a pattern means the same in RE2 and in ECMA-262 with the u flag",
	"integer_beyond_int64.yaml":   "an integer param's default and enum fit 64 bits (toolreg's integers are int64)",
	"not_utf8.yaml":               "a manifest is UTF-8 text (cue vet reads Latin-1 bytes as they come)",
	"cue_number_beyond_float64":   "a number is within float64's range (CUE reads -1e999999 as -1.0)",
	"duplicate_across_files":      "a tool name is declared once across all manifests",
	"cue_duplicate_across_files":  "a tool name is declared once across all manifests (cue merges the two)",
	"duplicate_key_same.yaml":     "a YAML mapping writes each key once (cue accepts a repeat of the same value)",
	"cue_wrong_package":           "a CUE manifest is in package toolreg (cue vet checks another package against nothing)",
	"budgets_unmeetable.yaml":     "a budget can be met: a scope once, per_entity only on a side-effecting tool, a window of 1s or more a Go program holds, per_activation within per_entity",
	"cue_undeclared_scope":        "a tool's scopes are among those its manifest set declares (CUE cannot see a YAML tool beside the package)",
}

func cases(t *testing.T, kind string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(corpus, kind))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) == 0 {
		t.Fatalf("no cases in %s/%s", corpus, kind)
	}
	return names
}

func TestLoadGoodManifests(t *testing.T) {
	t.Parallel()
	for _, name := range cases(t, "good") {
		t.Run(name+" loads without error", func(t *testing.T) {
			t.Parallel()
			specs, err := loader.LoadFS(os.DirFS(filepath.Join(corpus, "good")), name)
			if err != nil {
				t.Fatalf("LoadFS: %v", err)
			}
			if len(specs) == 0 {
				t.Fatal("LoadFS returned no tools")
			}
			for _, s := range specs {
				if !strings.HasPrefix(s.Pos.File, name) || s.Pos.Line == 0 {
					t.Errorf("tool %s: position %s is not in %s", s.Name, s.Pos, name)
				}
			}
		})
	}
}

// TestLoadBadManifests loads each bad case alone and compares the error's text
// with its golden file. Refresh the golden files with -update.
func TestLoadBadManifests(t *testing.T) {
	t.Parallel()
	for _, name := range cases(t, "bad") {
		t.Run(name+" is refused with every problem and its position", func(t *testing.T) {
			t.Parallel()
			specs, err := loader.LoadFS(os.DirFS(filepath.Join(corpus, "bad")), name)
			if err == nil {
				t.Fatalf("LoadFS accepted %s: %d tools", name, len(specs))
			}
			if specs != nil {
				t.Errorf("LoadFS returned %d specs with its error, want none", len(specs))
			}
			if !errors.Is(err, toolreg.ErrTool) {
				t.Errorf("error does not wrap toolreg.ErrTool: %v", err)
			}
			var tde *toolreg.ToolDefinitionError
			var dup *toolreg.DuplicateToolError
			if !errors.As(err, &tde) && !errors.As(err, &dup) {
				t.Fatalf("error is neither *ToolDefinitionError nor *DuplicateToolError: %T", err)
			}
			if tde != nil {
				for _, p := range tde.Problems {
					if !strings.HasPrefix(p.Pos.File, name) {
						t.Errorf("problem does not name a file of the case: %s", p)
					}
				}
			}
			got := err.Error() + "\n"
			golden := filepath.Join("testdata", "golden", strings.TrimSuffix(name, filepath.Ext(name))+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("error text differs from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

// TestLoaderAgreesWithCueVet runs the real cue CLI over the corpus: for every
// case the loader and `cue vet -c` accept exactly the same, except the bad
// cases loaderOnly names, which break a rule CUE cannot check.
func TestLoaderAgreesWithCueVet(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	cue := cueBinary(t, root)
	for _, kind := range []string{"good", "bad"} {
		for _, name := range cases(t, kind) {
			rule, only := loaderOnly[name]
			if only && kind == "good" {
				t.Fatalf("loaderOnly names good case %s", name)
			}
			desc := name + ": loader and cue vet both accept"
			switch {
			case only:
				desc = name + ": only the loader refuses (" + rule + ")"
			case kind == "bad":
				desc = name + ": loader and cue vet both refuse"
			}
			t.Run(desc, func(t *testing.T) {
				t.Parallel()
				_, loadErr := loader.LoadFS(os.DirFS(filepath.Join(corpus, kind)), name)
				cueOut, cueErr := cueVet(t, root, cue, filepath.Join("loader", corpus, kind, name))
				loaderOK, cueOK := loadErr == nil, cueErr == nil
				wantCue := kind == "good" || only
				if loaderOK != (kind == "good") {
					t.Errorf("loader accepted=%v, want %v: %v", loaderOK, kind == "good", loadErr)
				}
				if cueOK != wantCue {
					t.Errorf("cue vet accepted=%v, want %v:\n%s", cueOK, wantCue, cueOut)
				}
			})
		}
	}
}

// cueVet checks a case with the real cue CLI the way CI does: YAML files
// against #Tool, a directory of CUE files as its package (which takes in
// schema.cue at the module root).
func cueVet(t *testing.T, root, cue, rel string) (string, error) {
	t.Helper()
	path := filepath.Join(root, rel)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var yamls []string
	hasCUE := false
	if fi.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			switch filepath.Ext(e.Name()) {
			case ".yaml", ".yml":
				yamls = append(yamls, filepath.Join(rel, e.Name()))
			case ".cue":
				hasCUE = true
			}
		}
	} else {
		yamls = append(yamls, rel)
	}
	var out bytes.Buffer
	run := func(args ...string) error {
		cmd := exec.Command(cue, args...)
		cmd.Dir = root
		cmd.Stdout, cmd.Stderr = &out, &out
		return cmd.Run()
	}
	var errs []error
	if len(yamls) > 0 {
		errs = append(errs, run(append([]string{"vet", "-c", "-d", "#Tool", "schema.cue"}, yamls...)...))
	}
	if hasCUE {
		errs = append(errs, run("vet", "-c", "./"+filepath.ToSlash(rel)))
	}
	return out.String(), errors.Join(errs...)
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

var cueOnce = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "tool", "-n", "cue").Output()
	return strings.TrimSpace(string(out)), err
})

// cueBinary returns the path of the cue CLI pinned in go.mod, built once, so
// that each case runs it without the go command's overhead.
func cueBinary(t *testing.T, root string) string {
	t.Helper()
	path, err := cueOnce()
	if err != nil {
		t.Fatalf("go tool -n cue: %v (the cue CLI is a tool of go.mod: go get -tool cuelang.org/go/cmd/cue@v0.17.1)", err)
	}
	return path
}
