package toolreg_test

import (
	"flag"
	"fmt"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/go/packages"
)

var update = flag.Bool("update", false, "rewrite testdata/api.golden with the exported API of package toolreg")

// TestNoPackageOutsideTheModuleCanAttachAFunction builds, as a module of its
// own, a package that tries every way the API once had to attach a function
// to a side-effecting tool without bindings.Effect. Each must fail to compile,
// and a package that binds through bindings must compile: without that
// control, a broken harness would pass.
func TestNoPackageOutsideTheModuleCanAttachAFunction(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/outsider\n\ngo 1.25\n\nrequire github.com/beam-agents/toolreg v0.0.0\n\nreplace github.com/beam-agents/toolreg => " + root + "\n",
		"go.sum": string(sum),
		"bind/bind.go": `package bind

import (
	"context"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
)

type Args struct{ OrderID string ` + "`json:\"order_id\"`" + ` }

func Bind() (*bindings.Bound, error) {
	b := bindings.New([]*toolreg.Spec{{Name: "refund", Description: "Refund.", SideEffect: true,
		Params: []*toolreg.Param{{Name: "order_id", Schema: toolreg.Schema{Type: toolreg.TypeString}}}}})
	bindings.Effect(b, "refund", func(context.Context, Args) (string, error) { return "refunded", nil })
	return b.Bind()
}
`,
		"hook/hook.go": `package hook

import "github.com/beam-agents/toolreg/internal/toolbind"

var _ = toolbind.Attach
`,
		"bypass/bypass.go": `package bypass

import (
	"context"
	"encoding/json"

	"github.com/beam-agents/toolreg"
)

var spec = &toolreg.Spec{Name: "refund", Description: "Refund.", SideEffect: true}

var Tool = toolreg.NewBoundTool(spec, &toolreg.Binding{
	Call: func(context.Context, json.RawMessage) (any, error) { return "refunded", nil },
})

var Err = toolreg.ArgumentErrorFrom("refund", nil)

func init() { toolreg.SchemaCUE = "package toolreg" }
`,
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build := func(pkg string) (string, error) {
		cmd := exec.Command("go", "build", "-mod=mod", "-o", os.DevNull, pkg)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false", "GOPROXY=off")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	if out, err := build("./bind"); err != nil {
		t.Fatalf("a package binding through bindings.Effect does not build, so the harness proves nothing: %v\n%s", err, out)
	}
	out, err := build("./hook")
	if err == nil || !strings.Contains(out, "use of internal package github.com/beam-agents/toolreg/internal/toolbind not allowed") {
		t.Errorf("a package outside the module imports internal/toolbind: err = %v\n%s", err, out)
	}
	out, err = build("./bypass")
	if err == nil {
		t.Fatalf("a package outside the module attached a function to a tool by hand")
	}
	for _, want := range []string{
		"undefined: toolreg.NewBoundTool",
		"undefined: toolreg.Binding",
		"undefined: toolreg.ArgumentErrorFrom",
		"cannot assign to toolreg.SchemaCUE",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("building the bypass: output lacks %q:\n%s", want, out)
		}
	}
}

// loadAPI type-checks package toolreg.
func loadAPI(t *testing.T) *types.Package {
	t.Helper()
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedTypes | packages.NeedName}, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		t.Fatalf("loading package toolreg: %v", pkgs[0].Errors)
	}
	return pkgs[0].Types
}

// TestOnlyNewToolMakesATool reads package toolreg's exported API with
// go/types and holds it to the rule that keeps invariant 1 mechanical: the
// only exported way to get a *Tool is NewTool(*Spec), which binds nothing;
// no exported method of Tool takes a function or an interface value a
// function could hide in; Tool has no exported field; no exported variable
// holds a function a caller could replace.
func TestOnlyNewToolMakesATool(t *testing.T) {
	t.Parallel()
	pkg := loadAPI(t)
	tool := pkg.Scope().Lookup("Tool").Type()
	holdsTool := func(tt types.Type) bool {
		return types.Identical(tt, tool) || types.Identical(tt, types.NewPointer(tool))
	}
	funcLike := func(tt types.Type) bool {
		switch u := tt.Underlying().(type) {
		case *types.Signature:
			return true
		case *types.Interface:
			return u.Empty()
		}
		return false
	}
	for _, name := range pkg.Scope().Names() {
		obj := pkg.Scope().Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Func:
			sig := obj.Type().(*types.Signature)
			for i := range sig.Results().Len() {
				if holdsTool(sig.Results().At(i).Type()) && name != "NewTool" {
					t.Errorf("%s returns a Tool: only NewTool may make one", obj)
				}
			}
		case *types.Var:
			if funcLike(obj.Type()) {
				t.Errorf("exported variable %s holds a function (or any value) a caller could replace", obj)
			}
		}
	}
	newTool := pkg.Scope().Lookup("NewTool").Type().(*types.Signature)
	if newTool.Params().Len() != 1 || !types.Identical(newTool.Params().At(0).Type(), types.NewPointer(pkg.Scope().Lookup("Spec").Type())) {
		t.Errorf("NewTool is %s; want func(*Spec) *Tool, which binds nothing", newTool)
	}
	st := tool.Underlying().(*types.Struct)
	for i := range st.NumFields() {
		if st.Field(i).Exported() {
			t.Errorf("Tool has the exported field %s", st.Field(i).Name())
		}
	}
	ms := types.NewMethodSet(types.NewPointer(tool))
	for i := range ms.Len() {
		m := ms.At(i).Obj().(*types.Func)
		if m.Name() == "CheckResult" {
			// It takes a function's result to validate and keeps nothing of
			// it: it attaches nothing to the Tool.
			continue
		}
		sig := m.Type().(*types.Signature)
		for j := range sig.Params().Len() {
			if funcLike(sig.Params().At(j).Type()) {
				t.Errorf("Tool.%s takes %s, where a function can be passed", m.Name(), sig.Params().At(j).Type())
			}
		}
	}
}

// TestExportedAPIGolden lists every exported name of package toolreg with its
// type, fields and methods, so that a change to the contract vocabulary shows
// in review as a change to testdata/api.golden (refresh with -update).
func TestExportedAPIGolden(t *testing.T) {
	t.Parallel()
	pkg := loadAPI(t)
	qual := types.RelativeTo(pkg)
	var lines []string
	for _, name := range pkg.Scope().Names() {
		obj := pkg.Scope().Lookup(name)
		if !obj.Exported() {
			continue
		}
		tn, ok := obj.(*types.TypeName)
		if !ok {
			lines = append(lines, types.ObjectString(obj, qual))
			continue
		}
		lines = append(lines, fmt.Sprintf("type %s %s", name, kindOf(tn.Type().Underlying())))
		if st, ok := tn.Type().Underlying().(*types.Struct); ok {
			for i := range st.NumFields() {
				if f := st.Field(i); f.Exported() {
					lines = append(lines, fmt.Sprintf("field %s.%s %s", name, f.Name(), types.TypeString(f.Type(), qual)))
				}
			}
		}
		ms := types.NewMethodSet(types.NewPointer(tn.Type()))
		for i := range ms.Len() {
			if m := ms.At(i).Obj(); m.Exported() && m.Pkg() == pkg {
				lines = append(lines, fmt.Sprintf("method (*%s).%s %s", name, m.Name(), types.TypeString(m.Type(), qual)))
			}
		}
	}
	slices.Sort(lines)
	got := strings.Join(lines, "\n") + "\n"
	const golden = "testdata/api.golden"
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestExportedAPIGolden -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("exported API of package toolreg changed (-want +got); review it and refresh with -update:\n%s", diff)
	}
}

func kindOf(u types.Type) string {
	switch u.(type) {
	case *types.Struct:
		return "struct"
	case *types.Interface:
		return "interface"
	}
	return u.String()
}
