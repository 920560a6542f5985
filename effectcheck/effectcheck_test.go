package effectcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"
	"golang.org/x/tools/go/packages"

	"github.com/beam-agents/toolreg/internal/modpath"
)

func TestAnalyzerReportsUsesWithinOnePackage(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), Analyzer, "a", "github.com/beam-agents/toolreg/effector")
}

func TestCheckSeesTheWholeProgram(t *testing.T) {
	for _, tests := range []bool{false, true} {
		t.Run(fmt.Sprintf("with test files %v", tests), func(t *testing.T) {
			dir, err := filepath.Abs(analysistest.TestData())
			if err != nil {
				t.Fatal(err)
			}
			cfg := &packages.Config{
				Dir:   dir,
				Tests: tests,
				Env:   append(os.Environ(), "GOPATH="+dir, "GO111MODULE=off", "GOWORK=off"),
			}
			got, err := check(cfg, "a", "app", "billing", "github.com/beam-agents/toolreg/effector")
			if err != nil {
				t.Fatal(err)
			}
			wants := readWants(t, filepath.Join(dir, "src"), tests)
			for _, f := range got {
				key := fmt.Sprintf("%s:%d", f.Pos.Filename, f.Pos.Line)
				ok := false
				for i, re := range wants[key] {
					if re != nil && re.MatchString(f.Message) {
						wants[key][i] = nil
						ok = true
						break
					}
				}
				if !ok {
					t.Errorf("unexpected finding %s", f)
				}
			}
			for key, res := range wants {
				for _, re := range res {
					if re != nil {
						t.Errorf("%s: no finding matched %q", key, re)
					}
				}
			}
		})
	}
}

var wantRE = regexp.MustCompile("// want `([^`]*)`")

// readWants collects the "// want `regexp`" comments of the testdata sources
// by file:line.
func readWants(t *testing.T, root string, tests bool) map[string][]*regexp.Regexp {
	t.Helper()
	wants := make(map[string][]*regexp.Regexp)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		if !tests && strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range wantRE.FindAllStringSubmatch(line, -1) {
				key := fmt.Sprintf("%s:%d", modpath.Rel(path), i+1)
				wants[key] = append(wants[key], regexp.MustCompile(m[1]))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return wants
}
