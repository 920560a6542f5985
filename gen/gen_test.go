package gen

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/goname"
	"github.com/beam-agents/toolreg/loader"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// moduleRoot is the toolreg module's root, two levels up from this file.
func moduleRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// manifestSets are the manifest sets with golden files: the example set and
// gen's own shapes.
var manifestSets = []string{"manifests", "gen/testdata/manifests"}

// bindSets are the manifest sets generated code must bind for: every set with
// a golden file, and each manifest of the loader's good corpus (one set each:
// some declare the same tool).
func bindSets(t *testing.T) []string {
	t.Helper()
	good, err := filepath.Glob(filepath.Join(moduleRoot(t), "loader/testdata/manifests/good/*"))
	if err != nil || len(good) == 0 {
		t.Fatalf("no good loader manifests: %v", err)
	}
	sets := append([]string(nil), manifestSets...)
	for _, g := range good {
		rel, err := filepath.Rel(moduleRoot(t), g)
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, rel)
	}
	return sets
}

func load(t *testing.T, dir string) []*toolreg.Spec {
	t.Helper()
	specs, err := loader.Load(filepath.Join(moduleRoot(t), dir))
	if err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	if len(specs) == 0 {
		t.Fatalf("%s holds no tools", dir)
	}
	return specs
}

func TestGenerateMatchesGolden(t *testing.T) {
	t.Parallel()
	for _, set := range manifestSets {
		t.Run(set, func(t *testing.T) {
			t.Parallel()
			got, err := Generate(load(t, set), Options{Package: "tools", Source: set})
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", strings.ReplaceAll(set, "/", "_")+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./gen -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("generated code (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGeneratedCodeAlwaysBinds compiles the generated code of every manifest
// set, one package per set, with a program that binds a function to every
// tool through the generated helpers, and runs it: every Bind must succeed.
// One program serves every set, so the test compiles once.
func TestGeneratedCodeAlwaysBinds(t *testing.T) {
	root := moduleRoot(t)
	dir := t.TempDir()
	sets := bindSets(t)
	var prog, tail strings.Builder
	prog.WriteString("package main\n\nimport (\n\t\"context\"\n\t\"fmt\"\n\t\"os\"\n\n\t\"github.com/beam-agents/toolreg/bindings\"\n\t\"github.com/beam-agents/toolreg/loader\"\n\n")
	for i := range sets {
		fmt.Fprintf(&prog, "\ttools%d \"gentest/tools%d\"\n", i, i)
		fmt.Fprintf(&tail, "var _ = tools%d.Unused\n", i)
	}
	prog.WriteString(")\n\nfunc main() {\n")
	want := 0
	for i, set := range sets {
		specs := load(t, set)
		want += len(specs)
		src, err := Generate(specs, Options{Package: fmt.Sprintf("tools%d", i)})
		if err != nil {
			t.Fatalf("%s: %v", set, err)
		}
		mustWrite(t, filepath.Join(dir, fmt.Sprintf("tools%d", i), "tools.go"), src)
		// A set of remote tools only generates no helper to call.
		mustWrite(t, filepath.Join(dir, fmt.Sprintf("tools%d", i), "unused.go"), []byte(fmt.Sprintf("package tools%d\n\nconst Unused = 0\n", i)))
		bindAll(&prog, fmt.Sprintf("tools%d", i), specs, filepath.Join(root, set))
	}
	prog.WriteString("}\n\n")
	prog.WriteString(tail.String())
	mustWrite(t, filepath.Join(dir, "main.go"), []byte(prog.String()))
	mustWrite(t, filepath.Join(dir, "go.mod"), []byte(fmt.Sprintf(
		"module gentest\n\ngo 1.26\n\nrequire github.com/beam-agents/toolreg v0.0.0\n\nreplace github.com/beam-agents/toolreg => %s\n", root)))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, "go.sum"), sum)
	cmd := exec.CommandContext(context.Background(), "go", "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("generated code did not bind: %v\n%s", err, out)
	}
	if got := strings.Count(string(out), "bound "); got != len(sets) {
		t.Fatalf("program bound %d of %d sets:\n%s", got, len(sets), out)
	}
	total := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var n int
		if _, err := fmt.Sscanf(line, "bound %d tools", &n); err != nil {
			t.Fatalf("program said %q", line)
		}
		total += n
	}
	if total != want {
		t.Fatalf("program bound %d tools, want %d:\n%s", total, want, out)
	}
}

// bindAll writes, into main, the statements that load the manifests of one set
// and bind a function to each of its tools through package pkg's helpers.
func bindAll(b *strings.Builder, pkg string, specs []*toolreg.Spec, manifests string) {
	fmt.Fprintf(b, "\t{\n\t\tspecs, err := loader.Load(%q)\n\t\tif err != nil {\n\t\t\tfmt.Println(err)\n\t\t\tos.Exit(1)\n\t\t}\n", manifests)
	// Remote tools get no helper: package remote binds them, after checking
	// their servers; here they go in the tables as contracts.
	b.WriteString("\t\tb := bindings.New(specs, bindings.WithoutRemote())\n")
	for _, s := range specs {
		if s.Remote != nil {
			continue
		}
		n := goname.Exported(s.Name)
		if s.Returns != nil {
			// The generated result type is what the binder checks against
			// returns: binding it proves the two agree.
			fmt.Fprintf(b, "\t\t%s.Bind%s(b, func(ctx context.Context, a %s.%sArgs) (r %s.%sResult, err error) { return r, nil })\n", pkg, n, pkg, n, pkg, n)
			continue
		}
		fmt.Fprintf(b, "\t\t%s.Bind%s(b, func(ctx context.Context, a %s.%sArgs) (string, error) { return \"ok\", nil })\n", pkg, n, pkg, n)
	}
	fmt.Fprintf(b, "\t\tbound, err := b.Bind()\n\t\tif err != nil {\n\t\t\tfmt.Println(%q, err)\n\t\t\tos.Exit(1)\n\t\t}\n", manifests+":")
	b.WriteString("\t\tfmt.Printf(\"bound %d tools\\n\", len(bound.Pipeline.Tools()))\n\t}\n")
}

func mustWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGenerateRefusesWhatHasNoGoType(t *testing.T) {
	t.Parallel()
	spec := &toolreg.Spec{Name: "bulk", Description: "Bulk.", Pos: toolreg.Pos{File: "bulk.yaml", Line: 1, Col: 1},
		Params: []*toolreg.Param{
			{Name: "ids", Pos: toolreg.Pos{File: "bulk.yaml", Line: 4, Col: 3}, Schema: toolreg.Schema{Type: toolreg.TypeArray}},
			{Name: "meta", Pos: toolreg.Pos{File: "bulk.yaml", Line: 6, Col: 3}, Schema: toolreg.Schema{Type: toolreg.TypeObject}},
		}}
	_, err := Generate([]*toolreg.Spec{spec}, Options{Package: "tools"})
	var def *toolreg.ToolDefinitionError
	if err == nil || !errors.As(err, &def) || len(def.Problems) != 2 {
		t.Fatalf("err = %v, want a ToolDefinitionError with two problems", err)
	}
	for i, want := range []string{
		"bulk.yaml:4:3: bulk: params.ids: array without items has no Go element type: declare items",
		"bulk.yaml:6:3: bulk: params.meta: object without properties or additionalProperties has no Go type: declare one",
	} {
		if got := def.Problems[i].String(); got != want {
			t.Errorf("problem %d = %q, want %q", i, got, want)
		}
	}
}

// A remote tool is bound by package remote, never by a Go function: gen
// writes nothing for it, and a set of remote tools only imports nothing.
func TestGenerateWritesNothingForARemoteTool(t *testing.T) {
	t.Parallel()
	remote := &toolreg.Spec{Name: "gh_create_issue", Description: "Create an issue.", SideEffect: true,
		Remote: &toolreg.Remote{Server: "github", Tool: "create_issue"}}
	local := &toolreg.Spec{Name: "lookup", Description: "Look up."}
	src, err := Generate([]*toolreg.Spec{remote, local}, Options{Package: "tools"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(src), "GhCreateIssue") || !strings.Contains(string(src), "BindLookup") {
		t.Errorf("generated code binds the remote tool, or not the local one:\n%s", src)
	}
	src, err = Generate([]*toolreg.Spec{remote}, Options{Package: "tools"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(src), "import") {
		t.Errorf("a set of remote tools only imports packages it does not use:\n%s", src)
	}
}
