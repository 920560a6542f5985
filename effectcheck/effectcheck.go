package effectcheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/types/typeutil"

	"github.com/beam-agents/toolreg/internal/modpath"
)

const (
	rootPath     = "github.com/beam-agents/toolreg"
	bindingsPath = rootPath + "/bindings"
	effectorPath = rootPath + "/effector"
)

// Finding is one report. Its file is named relative to the root of its module
// (app/main.go), as go vet names files.
type Finding struct {
	Pos token.Position
	// Rule names what was found: RuleInlineEffect or RuleUnwrap.
	Rule    string
	Message string
}

// The rules a Finding names.
const (
	// RuleInlineEffect is a use of a function bound with bindings.Effect
	// other than its binding.
	RuleInlineEffect = "inline-effect"
	// RuleUnwrap is a use of Tool.Unwrap outside package effector.
	RuleUnwrap = "unwrap"
)

func (f Finding) String() string { return fmt.Sprintf("%s: %s", f.Pos, f.Message) }

// Analyzer checks one package: Unwrap outside package effector, and uses of
// functions bound with bindings.Effect in the same package.
var Analyzer = &analysis.Analyzer{
	Name: "effectcheck",
	Doc:  "report inline uses of side-effecting tool functions and of Tool.Unwrap outside package effector",
	URL:  "https://pkg.go.dev/" + rootPath + "/effectcheck",
	Run: func(pass *analysis.Pass) (any, error) {
		p := &pkg{path: pass.Pkg.Path(), fset: pass.Fset, files: pass.Files, info: pass.TypesInfo}
		effects := bindingsOf([]*pkg{p})
		for _, f := range p.check(effects) {
			pass.Reportf(f.pos, "%s", f.msg)
		}
		return nil, nil
	},
}

// Check loads the packages that patterns name (as go list does, from dir) and
// reports every inline use across them. Test files are checked only when
// tests is true: an effect function's own unit tests call it on purpose.
func Check(dir string, tests bool, patterns ...string) ([]Finding, error) {
	return check(&packages.Config{Dir: dir, Tests: tests}, patterns...)
}

func check(cfg *packages.Config, patterns ...string) ([]Finding, error) {
	cfg.Mode = packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes |
		packages.NeedTypesInfo | packages.NeedImports | packages.NeedDeps
	loaded, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, fmt.Errorf("effectcheck: %w", err)
	}
	var errs []string
	packages.Visit(loaded, nil, func(lp *packages.Package) {
		for _, e := range lp.Errors {
			errs = append(errs, e.Error())
		}
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("effectcheck: cannot check packages that do not load: fix these, or run it inside the module with patterns as go build takes them (./...):\n\t%s", strings.Join(errs, "\n\t"))
	}
	// The whole program: every package reachable from the patterns, since a
	// binding in main may name a function declared and misused in a dependency.
	var all []*pkg
	packages.Visit(loaded, nil, func(lp *packages.Package) {
		var files []*ast.File
		for _, f := range lp.Syntax {
			if !cfg.Tests && strings.HasSuffix(lp.Fset.Position(f.Pos()).Filename, "_test.go") {
				continue
			}
			files = append(files, f)
		}
		all = append(all, &pkg{path: lp.PkgPath, fset: lp.Fset, files: files, info: lp.TypesInfo})
	})
	effects := bindingsOf(all)
	seen := make(map[string]bool)
	var out []Finding
	for _, p := range all {
		for _, f := range p.check(effects) {
			pos := p.fset.Position(f.pos)
			pos.Filename = modpath.Rel(pos.Filename)
			key := pos.String() + f.msg
			if seen[key] { // a package and its test variant share files
				continue
			}
			seen[key] = true
			out = append(out, Finding{Pos: pos, Rule: f.rule, Message: f.msg})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Pos, out[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Offset < b.Offset
	})
	return out, nil
}

type pkg struct {
	path  string
	fset  *token.FileSet
	files []*ast.File
	info  *types.Info
}

type finding struct {
	pos  token.Pos
	rule string
	msg  string
}

// binding is where a function was bound with bindings.Effect.
type binding struct {
	tool string         // the tool name, when a constant
	pos  token.Position // the Effect call
	arg  ast.Expr       // the function argument, whose own use is the binding
}

// effectSet maps a bound function (or function variable) to its bindings.
type effectSet map[types.Object][]binding

// binder is a function that binds its argument at index arg as an effect:
// bindings.Effect itself, or a wrapper that passes a parameter on to a binder,
// such as the Bind<Tool> helpers toolreg gen writes.
type binder struct {
	arg  int
	tool string // the tool name, when the wrapper fixes it
}

// bindingsOf finds every function bound as an effect in pkgs, directly with
// bindings.Effect or through wrappers of it, followed to a fixed point.
func bindingsOf(pkgs []*pkg) effectSet {
	binders := make(map[types.Object]binder)
	set := make(effectSet)
	seen := make(map[*ast.CallExpr]bool)
	for changed := true; changed; {
		changed = false
		for _, p := range pkgs {
			for _, f := range p.files {
				for _, decl := range f.Decls {
					fd, _ := decl.(*ast.FuncDecl)
					ast.Inspect(decl, func(n ast.Node) bool {
						call, ok := n.(*ast.CallExpr)
						if !ok || seen[call] {
							return true
						}
						bd, ok := binderOf(p.info, call, binders)
						if !ok || bd.arg >= len(call.Args) {
							return true
						}
						if bd.tool == "" && isFunc(typeutil.Callee(p.info, call), bindingsPath, "Effect") {
							if tv, ok := p.info.Types[call.Args[1]]; ok && tv.Value != nil {
								bd.tool = strings.Trim(tv.Value.ExactString(), `"`)
							}
						}
						obj := funcObject(p.info, call.Args[bd.arg])
						if obj == nil { // a function literal: nothing else can name it
							seen[call] = true
							return true
						}
						if i := paramIndex(p.info, fd, obj); i >= 0 {
							// A wrapper: its callers' argument i is what gets bound.
							binders[origin(p.info.Defs[fd.Name])] = binder{arg: i, tool: bd.tool}
							seen[call], changed = true, true
							return true
						}
						set[obj] = append(set[obj], binding{tool: bd.tool, pos: p.fset.Position(call.Pos()), arg: call.Args[bd.arg]})
						seen[call] = true
						return true
					})
				}
			}
		}
	}
	return set
}

// binderOf reports whether call calls bindings.Effect or a known wrapper.
func binderOf(info *types.Info, call *ast.CallExpr, binders map[types.Object]binder) (binder, bool) {
	callee := typeutil.Callee(info, call)
	if isFunc(callee, bindingsPath, "Effect") && len(call.Args) == 3 {
		return binder{arg: 2}, true
	}
	bd, ok := binders[origin(callee)]
	return bd, ok
}

// paramIndex returns the index of obj among fd's parameters, or -1.
func paramIndex(info *types.Info, fd *ast.FuncDecl, obj types.Object) int {
	if fd == nil {
		return -1
	}
	fn, ok := info.Defs[fd.Name].(*types.Func)
	if !ok {
		return -1
	}
	params := fn.Signature().Params()
	for i := range params.Len() {
		if params.At(i) == obj {
			return i
		}
	}
	return -1
}

// funcObject returns the function, method or variable an expression names.
func funcObject(info *types.Info, e ast.Expr) types.Object {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		return origin(info.Uses[e])
	case *ast.SelectorExpr:
		if sel, ok := info.Selections[e]; ok {
			return origin(sel.Obj())
		}
		return origin(info.Uses[e.Sel])
	case *ast.IndexExpr: // an explicitly instantiated generic function
		return funcObject(info, e.X)
	case *ast.IndexListExpr:
		return funcObject(info, e.X)
	}
	return nil
}

func origin(obj types.Object) types.Object {
	switch o := obj.(type) {
	case *types.Func:
		return o.Origin()
	case *types.Var:
		return o.Origin()
	}
	return obj
}

func isFunc(obj types.Object, pkgPath, name string) bool {
	f, ok := obj.(*types.Func)
	return ok && f.Pkg() != nil && f.Pkg().Path() == pkgPath && f.Name() == name
}

// isUnwrap reports whether obj is the method toolreg.Tool.Unwrap.
func isUnwrap(obj types.Object) bool {
	f, ok := obj.(*types.Func)
	if !ok || f.Name() != "Unwrap" || f.Pkg() == nil || f.Pkg().Path() != rootPath {
		return false
	}
	recv := f.Signature().Recv()
	if recv == nil {
		return false
	}
	t := recv.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Name() == "Tool"
}

// check reports p's uses of the functions in effects, and its uses of Unwrap.
func (p *pkg) check(effects effectSet) []finding {
	// The bound argument itself is the one sanctioned use.
	bound := make(map[token.Pos]bool)
	for _, bs := range effects {
		for _, b := range bs {
			ast.Inspect(b.arg, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					bound[id.Pos()] = true
				}
				return true
			})
		}
	}
	var out []finding
	for _, f := range p.files {
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := origin(p.info.Uses[id])
			if obj == nil {
				return true
			}
			if bs, ok := effects[obj]; ok && !bound[id.Pos()] {
				b := bs[0]
				what := "a use"
				if isCalled(f, id) {
					what = "a call"
				}
				tool := ""
				if b.tool != "" {
					tool = fmt.Sprintf(" tool %q", b.tool)
				}
				out = append(out, finding{id.Pos(), RuleInlineEffect, fmt.Sprintf(
					"%s of %s, bound as side-effecting%s at %s:%d, runs its effect inline where a retry repeats it: request the tool with Activation.Act so the effector executes it once",
					what, obj.Name(), tool, modpath.Rel(b.pos.Filename), b.pos.Line)})
			}
			if isUnwrap(obj) && p.path != effectorPath && p.path != effectorPath+"_test" {
				out = append(out, finding{id.Pos(), RuleUnwrap,
					"Tool.Unwrap outside package effector bypasses the side-effect guard: run tools with runner.Runner (read-only) or through the effector (side-effecting)"})
			}
			return true
		})
	}
	return out
}

// isCalled reports whether id is the function position of a call in f.
func isCalled(f *ast.File, id *ast.Ident) bool {
	called := false
	ast.Inspect(f, func(n ast.Node) bool {
		if called {
			return false
		}
		if n == nil || n.Pos() > id.Pos() || n.End() < id.End() {
			return n == nil || n.Pos() <= id.Pos()
		}
		if call, ok := n.(*ast.CallExpr); ok {
			fun := ast.Unparen(call.Fun)
			if sel, ok := fun.(*ast.SelectorExpr); ok {
				fun = sel.Sel
			}
			if fun == id {
				called = true
				return false
			}
		}
		return true
	})
	return called
}
