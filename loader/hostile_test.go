package loader_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
)

// aliasBomb is a "billion laughs": nine levels of nine aliases each, 9^9
// values once expanded, in a few hundred bytes.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("name: bomb\ndescription: d\nl0: &l0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 9; i++ {
		b.WriteString("l" + string(rune('0'+i)) + ": &l" + string(rune('0'+i)) + " [")
		for j := range 9 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*l" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func TestHostileInputIsRefusedClearly(t *testing.T) {
	t.Parallel()
	deepBlock := "name: deep\ndescription: d\nparams:\n  p:\n"
	for i := range 100 {
		deepBlock += strings.Repeat("  ", i+2) + "type: array\n" + strings.Repeat("  ", i+2) + "items:\n"
	}
	tests := []struct {
		name, file, data, want string
	}{
		{"a YAML alias bomb", "m.yaml", aliasBomb(), "more than 100000 values (after expanding aliases)"},
		{"a file over 1 MiB", "m.yaml", "name: big\ndescription: d\n" + strings.Repeat("# padding\n", 110_000), "over the 1048576-byte (1 MiB) limit"},
		{"a CUE file over 1 MiB", "m.cue", "package toolreg\n" + strings.Repeat("// padding\n", 100_000), "over the 1048576-byte (1 MiB) limit"},
		{"YAML flow lists nested 100,000 deep", "m.yaml", strings.Repeat("[", 100_000), "invalid YAML"},
		{"YAML block mappings nested 200 deep", "m.yaml", deepBlock, "nested more than 64 levels deep"},
		{"CUE structs nested 100,000 deep", "m.cue", "package toolreg\nx: " + strings.Repeat("{a: ", 100_000) + strings.Repeat("}", 100_000), "nested more than 200 levels deep"},
		{"binary junk", "m.yaml", "\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe", "not UTF-8 text"},
		{"invalid UTF-8", "m.yaml", "name: caf\xe9\ndescription: d\n", "not UTF-8 text"},
		{"binary junk in a CUE file", "m.cue", "\x00\x01\x02", "not UTF-8 text"},
		{"an empty YAML file", "m.yaml", "", "empty file"},
		{"an empty CUE file", "m.cue", "  \n", "empty file"},
		{"a YAML document that is a list", "m.yaml", "- a\n- b\n", "document 1 is a list, not a mapping"},
		{"a YAML document that is a scalar", "m.yaml", "42\n", "document 1 is an integer, not a mapping"},
		{"a YAML document that is null", "m.yaml", "~\n", "document 1 is empty"},
		{"a YAML tag JSON cannot hold", "m.yaml", "name: !!binary aGVsbG8=\ndescription: d\n", "unsupported YAML tag !!binary"},
		{"infinity", "m.yaml", "name: n\ndescription: d\nparams:\n  x: {type: number, maximum: .inf}\n", ".inf is not a JSON number"},
		{"a CUE file that is a list", "m.cue", "package toolreg\n[1, 2]\n", "m.cue"},
		{"a CUE file whose tools is a number", "m.cue", "package toolreg\ntools: 5\n", "m.cue"},
		{"a CUE file importing a module", "m.cue", "package toolreg\nimport \"example.com/evil\"\n", "may import only the CUE standard library"},
		{"a CUE file without a package", "m.cue", "tools: x: description: \"d\"\n", "must start with `package toolreg`"},
	}
	for _, tc := range tests {
		t.Run(tc.name+" is refused naming the file", func(t *testing.T) {
			t.Parallel()
			fsys := fstest.MapFS{tc.file: {Data: []byte(tc.data)}}
			done := make(chan error, 1)
			go func() {
				_, err := loader.LoadFS(fsys, tc.file)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("LoadFS did not return within 30s")
			}
			var tde *toolreg.ToolDefinitionError
			if !errors.As(err, &tde) {
				t.Fatalf("got %v, want a *toolreg.ToolDefinitionError", err)
			}
			for _, p := range tde.Problems {
				if p.Pos.File != tc.file {
					t.Errorf("problem does not name %s: %s", tc.file, p)
				}
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not say %q:\n%v", tc.want, err)
			}
			if len(err.Error()) > 4096 {
				t.Errorf("error is %d bytes long: a clear error is short", len(err.Error()))
			}
		})
	}
}

func TestManyDocumentsInOneFileLoad(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	for i := range 500 {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.WriteString("name: tool_" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "_" + strconv.Itoa(i) + "\ndescription: d\n")
	}
	specs, err := loader.LoadFS(fstest.MapFS{"m.yaml": {Data: b.Bytes()}}, "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 500 {
		t.Errorf("loaded %d tools, want 500", len(specs))
	}
}

// Not parallel: it changes the package's CUE time limit and phase hook.
// The whole CUE step of a package (the budget, CUE's evaluation, decoding
// and checking its tools) is under one time bound: each phase held past it
// is refused, naming what the step was doing and where.
func TestTheCUEStepIsBoundedInTime(t *testing.T) {
	defer loader.SetCUETimeout(100 * time.Millisecond)()
	// 20^3 = 8,000 list elements: within the budget of work.
	big := "package toolreg\nr: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]\n" +
		"big: [for a in r for b in r for c in r {a + b + c}]\n"
	plain := "package toolreg\n\ntools: lookup: description: \"Look up.\"\n"
	tests := []struct{ phase, src, want string }{
		{"budget", big, "m.cue:1:1: checking this declaration against the budget of work took over 100ms, the limit on a CUE package's check"},
		{"evaluate", big, "m.cue:3:7: evaluating this CUE package took over 100ms, the limit on its check; its costliest construct by the budget's count is this one (8000 iterations of the 10000 allowed): simplify it"},
		{"evaluate", plain, "m.cue: evaluating this CUE package took over 100ms, the limit on its check: simplify what it unifies"},
		{"decode", plain, "m.cue:3:8: checking tool \"lookup\" of this CUE package took over 100ms"},
	}
	for _, tc := range tests {
		release := make(chan struct{})
		restore := loader.SetCUEPhaseHook(func(phase string) {
			if phase == tc.phase {
				<-release
			}
		})
		err := loadOrHang(t, fstest.MapFS{"m.cue": {Data: []byte(tc.src)}}, "m.cue")
		close(release)
		restore()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s held past the limit: got %v, want %q", tc.phase, err, tc.want)
		}
	}
}

// A file that is no manifest, or a huge value, is shown by a short excerpt:
// never reprinted in full, so that vet cannot leak a file into CI logs or
// bury its findings.
func TestLongValuesAreCutInMessages(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", 500_000)
	tests := []struct{ name, data string }{
		{"a 500 KB tool name", "name: " + long + "\ndescription: d\n"},
		{"a 500 KB param name", "name: t\ndescription: d\nparams:\n  " + long + ": {type: string}\n"},
		{"a 500 KB type", "name: t\ndescription: d\nparams:\n  p: {type: " + long + "}\n"},
		{"a 500 KB pattern", "name: t\ndescription: d\nparams:\n  p: {type: string, pattern: \"(" + long + "\"}\n"},
		{"a 500 KB key twice", "name: t\ndescription: d\n" + long + ": 1\n" + long + ": 2\n"},
		{"a 500 KB boolean", "name: t\ndescription: d\nside_effect: !!bool " + long + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name+" is cut", func(t *testing.T) {
			t.Parallel()
			_, err := loader.LoadFS(fstest.MapFS{"m.yaml": {Data: []byte(tc.data)}}, "m.yaml")
			if err == nil {
				t.Fatal("accepted")
			}
			if len(err.Error()) > 4096 {
				t.Errorf("error is %d bytes: %.300s...", len(err.Error()), err)
			}
			if !strings.Contains(err.Error(), "500") {
				t.Errorf("error does not say how long the value was: %v", err)
			}
		})
	}
}

// A bound beyond what a float64 (and so JavaScript) can hold is named as such,
// not as a string.
func TestHugeNumbersAreReportedAsNumbers(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"1e999999", "-1e400", "1" + strings.Repeat("0", 400)} {
		data := "name: t\ndescription: d\nparams:\n  p:\n    type: number\n    maximum: " + n + "\n"
		_, err := loader.LoadFS(fstest.MapFS{"m.yaml": {Data: []byte(data)}}, "m.yaml")
		if err == nil {
			t.Fatalf("maximum %s accepted", n)
		}
		msg := err.Error()
		if strings.Contains(msg, "string") || !strings.Contains(msg, "m.yaml:6:5") || !strings.Contains(msg, "params.p.maximum") || !strings.Contains(msg, "1.8e308") {
			t.Errorf("maximum %s: got %v, want it named as a number beyond float64's range at m.yaml:6:5", n, err)
		}
	}
}

// CUE evaluation cannot be interrupted, so work a package asks for is
// bounded before it is evaluated: each hostile package is refused at once,
// naming the construct at fault, and leaves nothing running.
func TestCUEWorkIsBoundedBeforeEvaluation(t *testing.T) {
	t.Parallel()
	chain := "package toolreg\na0: int | string\n"
	for i := 1; i <= 40; i++ {
		chain += "a" + strconv.Itoa(i) + ": a" + strconv.Itoa(i-1) + " | a" + strconv.Itoa(i-1) + "\n"
	}
	tests := []struct{ name, src, want string }{
		{"a comprehension over 100k items", "package toolreg\nimport \"list\"\ntools: {for i in list.Range(0, 100000, 1) {\"t\\(i)\": description: \"d\"}}\n",
			"m.cue:3:9: this comprehension brings the package to 100000 iterations"},
		{"a 1000x1000x1000 nested comprehension", "package toolreg\nimport \"list\"\nr: list.Range(0, 1000, 1)\nx: [for a in r for b in r for c in r {a + b + c}]\n",
			"m.cue:4:5: this comprehension brings the package to 1000000000 iterations"},
		{"nested comprehensions over a list they build", "package toolreg\nr: [for a in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] for b in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] {a * b}]\ns: [for a in r for b in r {a}]\n",
			"m.cue:3:5: this comprehension brings the package to 10100 iterations"},
		{"a deep disjunction chain", chain, "disjuncts"},
		{"a disjunction of disjunctions unified", "package toolreg\nd: 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10\nx: d & d & d & d\n", "m.cue:3:4: this value expands to 10000 disjuncts"},
		{"a comprehension over what the syntax cannot size", "package toolreg\nimport \"strings\"\nx: [for a in strings.Split(\"a,b\", \",\") {a}]\n", "m.cue:3:5: cannot tell how many values this comprehension ranges over"},
	}
	for _, tc := range tests {
		t.Run(tc.name+" is refused unevaluated", func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, err := loader.LoadFS(fstest.MapFS{"m.cue": {Data: []byte(tc.src)}}, "m.cue")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v: the package was evaluated", d)
			}
		})
	}
	// Within the budget, a comprehension generating tools is fine.
	src := "package toolreg\nnames: [\"a\", \"b\", \"c\"]\ntools: {for n in names {\"get_\\(n)\": description: \"Get \\(n).\"}}\n"
	specs, err := loader.LoadFS(fstest.MapFS{"m.cue": {Data: []byte(src)}}, "m.cue")
	if err != nil || len(specs) != 3 {
		t.Errorf("a small comprehension: got %d specs, %v; want 3 tools", len(specs), err)
	}
}

// Not parallel: it counts goroutines. A package refused for its budget is
// never evaluated, so nothing is left running after Load returns.
func TestARefusedCUEPackageLeavesNothingRunning(t *testing.T) {
	before := runtime.NumGoroutine()
	src := "package toolreg\nimport \"list\"\nr: list.Range(0, 1000, 1)\nx: [for a in r for b in r for c in r {a + b + c}]\n"
	for range 5 {
		if _, err := loader.LoadFS(fstest.MapFS{"m.cue": {Data: []byte(src)}}, "m.cue"); err == nil {
			t.Fatal("accepted a package over the budget")
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Load, %d before: an evaluation is still running", n, before)
	}
}

// loadOrHang loads name from fsys, failing the test if Load has not
// returned within 30 seconds: far past the CUE step's bound, so only a
// check that never ends trips it.
func loadOrHang(t *testing.T, fsys fs.FS, name string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := loader.LoadFS(fsys, name)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("LoadFS(%s) did not return within 30s", name)
		return nil
	}
}

// TestCUEReferenceGraphsAreCheckedOnce loads each file of testdata/hostile:
// chains, ladders of diamonds, self-references and cycles of references,
// which a guard that follows references without remembering what it sized
// visits exponentially often. Each file's first line says what Load must
// answer: `// want: ok`, or the start of the finding. The reference cases
// the real cue vet can judge are in the corpus (testdata/manifests, the
// cue_reference_*, cue_self_reference and cue_mutual_reference cases).
func TestCUEReferenceGraphsAreCheckedOnce(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "hostile")
	files, err := filepath.Glob(filepath.Join(dir, "*.cue"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no hostile cases in %s: %v", dir, err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(src), "\n")
		want, ok := strings.CutPrefix(first, "// want: ")
		if !ok {
			t.Fatalf("%s: the first line is not `// want: ...`", path)
		}
		t.Run(name+" is answered", func(t *testing.T) {
			t.Parallel()
			err := loadOrHang(t, os.DirFS(dir), name)
			switch {
			case want == "ok" && err != nil:
				t.Errorf("refused: %v", err)
			case want != "ok" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("got %v, want %q", err, want)
			}
		})
	}
}
