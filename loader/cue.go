package loader

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/beam-agents/toolreg"
)

// schemaPackage is the CUE package of schema.cue; a CUE manifest must be in it
// for `cue vet` to check it against the schema.
const schemaPackage = "toolreg"

// maxCUEDepth bounds the nesting of brackets in a CUE file, checked before
// parsing: the CUE parser recurses once per level, and a deep enough file would
// exhaust the stack, which Go cannot recover from.
const maxCUEDepth = 200

// cueFile is one parsed CUE manifest.
type cueFile struct {
	name string
	ast  *ast.File
}

// parseCUE parses one CUE manifest, refusing what the loader cannot check.
func parseCUE(name string, src []byte) (*cueFile, []toolreg.Problem) {
	if p, ok := cueTooDeep(name, src); ok {
		return nil, []toolreg.Problem{p}
	}
	f, err := parser.ParseFile(name, src)
	if err != nil {
		var ps []toolreg.Problem
		for _, e := range cueerrors.Errors(err) {
			format, args := e.Msg()
			ps = append(ps, toolreg.Problem{Pos: cuePos(e.Position(), name), Message: "invalid CUE: " + fmt.Sprintf(format, args...)})
		}
		return nil, ps
	}
	if pkg := f.PackageName(); pkg != schemaPackage {
		msg := fmt.Sprintf("a CUE manifest must declare package %s (not %q), so that cue vet checks it against schema.cue", schemaPackage, pkg)
		if pkg == "" {
			msg = fmt.Sprintf("a CUE manifest must start with `package %s`, so that cue vet checks it against schema.cue", schemaPackage)
		}
		return nil, []toolreg.Problem{{Pos: toolreg.Pos{File: name, Line: 1, Col: 1}, Message: msg}}
	}
	if ps := hugeLiterals(name, f); ps != nil {
		return nil, ps
	}
	for imp := range f.ImportSpecs() {
		path := strings.Trim(imp.Path.Value, `"`)
		if strings.Contains(strings.SplitN(path, "/", 2)[0], ".") {
			return nil, []toolreg.Problem{{Pos: cuePos(imp.Pos(), name),
				Message: fmt.Sprintf("import %q: a CUE manifest may import only the CUE standard library", path)}}
		}
	}
	return &cueFile{name: name, ast: f}, nil
}

// cueTooDeep scans src for bracket nesting beyond maxCUEDepth, skipping
// comments and simple strings. It errs on the side of refusing.
func cueTooDeep(name string, src []byte) (toolreg.Problem, bool) {
	depth, line, col := 0, 1, 0
	inStr := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		col++
		if c == '\n' {
			line, col = line+1, 0
			continue
		}
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '/':
			if i+1 < len(src) && src[i+1] == '/' {
				for i < len(src) && src[i] != '\n' {
					i++
				}
				line, col = line+1, 0
			}
		case '{', '[', '(':
			depth++
			if depth > maxCUEDepth {
				return toolreg.Problem{Pos: toolreg.Pos{File: name, Line: line, Col: col},
					Message: fmt.Sprintf("nested more than %d levels deep: a manifest is never this deep", maxCUEDepth)}, true
			}
		case '}', ']', ')':
			depth--
		}
	}
	return toolreg.Problem{}, false
}

func cuePos(p token.Pos, fallback string) toolreg.Pos {
	if !p.IsValid() {
		return toolreg.Pos{File: fallback}
	}
	return toolreg.Pos{File: p.Filename(), Line: p.Line(), Col: p.Column()}
}

// cueTool is one tool a CUE package declares.
type cueTool struct {
	name string
	root *node
	// again is where another file of the package declares the tool too, if
	// one does: CUE would unify the two silently.
	again toolreg.Pos
}

// evalCUE builds the files of one CUE package (one directory) together with
// the schema, in a context of its own, and returns its tools (those it can
// find, even when the package has errors) and its problems.
// The schema is parsed afresh: the CUE compiler annotates the syntax tree it
// is given, so one tree cannot be shared by builds running in parallel.
func evalCUE(files []*cueFile) ([]cueTool, []toolreg.Problem, map[string]toolreg.Pos) {
	sf, err := parser.ParseFile(schemaFile, toolreg.SchemaCUE())
	if err != nil {
		panic("loader: embedded schema.cue does not parse: " + err.Error())
	}
	inst := build.NewContext().NewInstance("", nil)
	inst.PkgName = schemaPackage
	if err := inst.AddSyntax(sf); err != nil {
		panic("loader: embedded schema.cue: " + err.Error())
	}
	labels := map[string]toolreg.Pos{}
	for _, f := range files {
		if err := inst.AddSyntax(f.ast); err != nil {
			return nil, []toolreg.Problem{{Pos: toolreg.Pos{File: f.name}, Message: err.Error()}}, nil
		}
		for _, d := range f.ast.Decls {
			if fd, ok := d.(*ast.Field); ok {
				labelPositions(nil, fd, labels)
			}
		}
	}
	again := redeclared(files)
	first := toolreg.Pos{File: files[0].name}
	v := cuecontext.New().BuildInstance(inst)
	var ps []toolreg.Problem
	var failed map[string]bool // tools with an error of CUE's
	if err := v.Validate(cue.Concrete(true)); err != nil {
		ps, failed = cueProblems(v, err, labels, first)
	}
	scopes := declaredScopes(v, labels, first)
	tv := v.LookupPath(cue.MakePath(cue.Str("tools")))
	if !tv.Exists() {
		return nil, ps, scopes
	}
	it, err := tv.Fields()
	if err != nil {
		if ps == nil {
			ps, _ = cueProblems(v, err, labels, first)
		}
		return nil, ps, scopes
	}
	var tools []cueTool
	for it.Next() {
		name := it.Selector().Unquoted()
		path := "tools." + name
		t := cueTool{name: name, root: cueNode(it.Value(), path, labels, labels[path]), again: again[name]}
		if !failed[name] {
			// CUE reports a missing field only when nothing else in the
			// package is wrong: each tool's are added here.
			ps = append(ps, withMissing(nil, name, t.root, false)...)
		}
		tools = append(tools, t)
	}
	return tools, ps, scopes
}

// declaredScopes returns the scopes a package declares under the top-level
// scopes struct, with where each is declared; nil when it declares none.
func declaredScopes(v cue.Value, labels map[string]toolreg.Pos, fallback toolreg.Pos) map[string]toolreg.Pos {
	sv := v.LookupPath(cue.MakePath(cue.Str("scopes")))
	if !sv.Exists() {
		return nil
	}
	it, err := sv.Fields()
	if err != nil {
		return nil // the package's errors say why
	}
	out := map[string]toolreg.Pos{}
	for it.Next() {
		name := it.Selector().Unquoted()
		if !toolreg.ValidScope(name) {
			continue // the schema refuses it
		}
		pos, ok := labels["scopes."+name]
		if !ok {
			pos = fallback
		}
		out[name] = pos
	}
	return out
}

// redeclared finds the tools that two files of one package both declare, and
// returns where the second declares each.
func redeclared(files []*cueFile) map[string]toolreg.Pos {
	firstFile := map[string]string{}
	again := map[string]toolreg.Pos{}
	for _, f := range files {
		for _, d := range f.ast.Decls {
			fd, ok := d.(*ast.Field)
			if !ok {
				continue
			}
			if name, _, err := ast.LabelName(fd.Label); err != nil || name != "tools" {
				continue
			}
			st, ok := fd.Value.(*ast.StructLit)
			if !ok {
				continue
			}
			for _, e := range st.Elts {
				tf, ok := e.(*ast.Field)
				if !ok {
					continue
				}
				name, _, err := ast.LabelName(tf.Label)
				if err != nil {
					continue
				}
				switch first, seen := firstFile[name]; {
				case !seen:
					firstFile[name] = f.name
				case first != f.name:
					if _, ok := again[name]; !ok {
						again[name] = cuePos(tf.Label.Pos(), f.name)
					}
				}
			}
		}
	}
	return again
}

// cueProblems translates the errors of a CUE package v. An error inside
// tools.<name> is that tool's; others are the package's. failed names the
// tools with an error.
func cueProblems(v cue.Value, err error, labels map[string]toolreg.Pos, fallback toolreg.Pos) ([]toolreg.Problem, map[string]bool) {
	var ps []toolreg.Problem
	var order []string
	byTool := map[string][]cueerrors.Error{}
	for _, e := range cueerrors.Errors(err) {
		tool := "\x00" // not a tool's error
		if path := e.Path(); len(path) >= 2 && path[0] == "tools" {
			tool = unquoteLabel(path[1])
		}
		if _, ok := byTool[tool]; !ok {
			order = append(order, tool)
		}
		byTool[tool] = append(byTool[tool], e)
	}
	failed := make(map[string]bool, len(order))
	for _, tool := range order {
		where := func(e cueerrors.Error, _ []string) toolreg.Pos {
			return manifestPos(e, e.Path(), labels, fallback)
		}
		if tool == "\x00" {
			ps = append(ps, translate(byTool[tool], 0, nil, "", nil, where)...)
			continue
		}
		failed[tool] = true
		path := "tools." + tool
		tree := cueNode(v.LookupPath(cue.MakePath(cue.Str("tools"), cue.Str(tool))), path, labels, labels[path])
		ps = append(ps, withMissing(translate(byTool[tool], 2, nil, tool, tree, where), tool, tree, false)...)
	}
	return ps, failed
}

// manifestPos finds where in the manifests (not in schema.cue) an error is:
// the label of its path where a manifest writes it, its own position, one of
// its inputs, or the label of the deepest field of its path that a manifest
// writes.
func manifestPos(e cueerrors.Error, path []string, labels map[string]toolreg.Pos, fallback toolreg.Pos) toolreg.Pos {
	if p, ok := labels[pathKey(path)]; ok && len(path) > 0 {
		return p
	}
	if p := e.Position(); p.IsValid() && p.Filename() != schemaFile {
		return cuePos(p, "")
	}
	for _, p := range e.InputPositions() {
		if p.IsValid() && p.Filename() != schemaFile {
			return cuePos(p, "")
		}
	}
	for i := len(path); i > 0; i-- {
		if p, ok := labels[pathKey(path[:i])]; ok {
			return p
		}
	}
	return fallback
}

func pathKey(path []string) string {
	parts := make([]string, len(path))
	for i, el := range path {
		parts[i] = unquoteLabel(el)
	}
	return strings.Join(parts, ".")
}

// labelPositions records where each field under f is written, keyed by its
// dotted path; it follows struct literals and both sides of &.
func labelPositions(prefix []string, f *ast.Field, m map[string]toolreg.Pos) {
	name, _, err := ast.LabelName(f.Label)
	if err != nil {
		return
	}
	path := append(prefix[:len(prefix):len(prefix)], name)
	key := strings.Join(path, ".")
	if _, ok := m[key]; !ok {
		m[key] = cuePos(f.Label.Pos(), "")
	}
	var walk func(x ast.Expr)
	walk = func(x ast.Expr) {
		switch x := x.(type) {
		case *ast.StructLit:
			for _, d := range x.Elts {
				if fd, ok := d.(*ast.Field); ok {
					labelPositions(path, fd, m)
				}
			}
		case *ast.BinaryExpr:
			if x.Op == token.AND {
				walk(x.X)
				walk(x.Y)
			}
		case *ast.ParenExpr:
			walk(x.X)
		}
	}
	walk(f.Value)
}

// cueNode converts a validated, concrete CUE value to a node. Positions come
// from the manifest's labels, falling back to the nearest enclosing one.
func cueNode(v cue.Value, path string, labels map[string]toolreg.Pos, pos toolreg.Pos) *node {
	if d, ok := v.Default(); ok {
		v = d
	}
	if p, ok := labels[path]; ok {
		pos = p
	}
	n := &node{pos: pos}
	k := v.Kind()
	if k == cue.BottomKind {
		// A struct with an error inside still shows its fields, for hints
		// and positions.
		if it, err := v.Fields(); err == nil && it.Next() {
			k = cue.StructKind
		}
	}
	switch k {
	case cue.StructKind:
		n.kind = kindMap
		it, _ := v.Fields()
		for it.Next() {
			k := it.Selector().Unquoted()
			kp := path + "." + k
			child := cueNode(it.Value(), kp, labels, pos)
			if _, written := labels[kp]; !written && child.bad {
				continue // a required field the manifest does not write
			}
			n.keys = append(n.keys, k)
			n.kpos = append(n.kpos, child.pos)
			n.vals = append(n.vals, child)
		}
	case cue.ListKind:
		n.kind = kindList
		it, _ := v.List()
		for i := 0; it.Next(); i++ {
			n.items = append(n.items, cueNode(it.Value(), fmt.Sprintf("%s.%d", path, i), labels, pos))
		}
	case cue.BoolKind:
		b, _ := v.Bool()
		n.kind, n.text = kindBool, fmt.Sprint(b)
	case cue.IntKind:
		b, _ := v.MarshalJSON()
		n.kind, n.text = kindInt, string(b)
	case cue.FloatKind:
		b, _ := v.MarshalJSON()
		n.kind, n.text = kindFloat, string(b)
	case cue.StringKind:
		n.kind = kindString
		n.text, _ = v.String()
	case cue.NullKind:
		n.kind = kindNull
	default:
		n.kind, n.bad = kindNull, true
	}
	return n
}

// hugeLiterals finds the number literals beyond float64's range: CUE itself
// reads some of them wrong (-1e999999 as -1.0), so they are refused as
// written, before CUE sees them.
func hugeLiterals(name string, f *ast.File) []toolreg.Problem {
	var ps []toolreg.Problem
	ast.Walk(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || (lit.Kind != token.FLOAT && lit.Kind != token.INT) {
			return true
		}
		if _, err := strconv.ParseFloat(lit.Value, 64); errors.Is(err, strconv.ErrRange) {
			ps = append(ps, toolreg.Problem{Pos: cuePos(lit.Pos(), name),
				Message: fmt.Sprintf("number %s is beyond the range of a float64 (about ±1.8e308 to 4.9e-324), which JSON Schema consumers (JavaScript) and toolreg's checks hold numbers in: use a number within it", short(lit.Value))})
		}
		return true
	}, nil)
	return ps
}
