package loader

import (
	"fmt"
	"math"
	"strconv"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"

	"github.com/beam-agents/toolreg"
)

// The budget of work a CUE package may ask of the evaluator, checked on its
// syntax before it is evaluated: CUE's evaluation cannot be interrupted, so a
// package over budget is refused unevaluated, naming the construct at fault,
// and nothing is left running. A manifest needs none of it; generating a
// handful of tools from a list fits well inside.
const (
	// maxCUEIterations bounds the iterations of a package's comprehensions,
	// nested ones multiplied out (for a in A for b in B is |A|·|B|).
	maxCUEIterations = 10_000
	// maxCUEDisjuncts bounds the disjuncts one value can expand to (a | b
	// counts 2; (a | b) & (c | d) counts 4; a reference counts as what it
	// names).
	maxCUEDisjuncts = 1_000
)

// cueBudget checks a package's files against the budget.
type cueBudget struct {
	fields   map[string][]ast.Expr // each label's values, in every file
	visiting map[string]bool       // labels being sized, against cycles
	total    int
	probs    []toolreg.Problem
}

func checkCUEBudget(files []*cueFile) []toolreg.Problem {
	b := &cueBudget{fields: map[string][]ast.Expr{}, visiting: map[string]bool{}}
	for _, f := range files {
		ast.Walk(f.ast, func(n ast.Node) bool {
			if fd, ok := n.(*ast.Field); ok {
				if name, _, err := ast.LabelName(fd.Label); err == nil {
					b.fields[name] = append(b.fields[name], fd.Value)
				}
			}
			if lc, ok := n.(*ast.LetClause); ok {
				b.fields[lc.Ident.Name] = append(b.fields[lc.Ident.Name], lc.Expr)
			}
			return true
		}, nil)
	}
	for _, f := range files {
		for _, d := range f.ast.Decls {
			b.walk(f.name, d, 1)
			if len(b.probs) > 0 {
				return b.probs
			}
		}
	}
	return nil
}

func (b *cueBudget) fail(file string, n ast.Node, format string, args ...any) {
	if len(b.probs) == 0 {
		b.probs = append(b.probs, toolreg.Problem{Pos: cuePos(n.Pos(), file), Message: fmt.Sprintf(format, args...)})
	}
}

// walk visits n, whose every value is made outer times (by the
// comprehensions around it).
func (b *cueBudget) walk(file string, n ast.Node, outer int) {
	if len(b.probs) > 0 || n == nil {
		return
	}
	switch x := n.(type) {
	case *ast.Field:
		b.disjuncts(file, x.Value)
		b.walk(file, x.Value, outer)
	case *ast.EmbedDecl:
		b.walk(file, x.Expr, outer)
	case *ast.LetClause:
		b.walk(file, x.Expr, outer)
	case *ast.StructLit:
		for _, d := range x.Elts {
			b.walk(file, d, outer)
		}
	case *ast.ListLit:
		for _, e := range x.Elts {
			b.disjuncts(file, e)
			b.walk(file, e, outer)
		}
	case *ast.Comprehension:
		n := outer
		for _, c := range x.Clauses {
			fc, ok := c.(*ast.ForClause)
			if !ok {
				if lc, ok := c.(*ast.LetClause); ok {
					b.walk(file, lc.Expr, n)
				}
				continue
			}
			size, known := b.size(fc.Source, 0)
			if !known {
				b.fail(file, fc, "cannot tell how many values this comprehension ranges over, so its work cannot be bounded: range over a list or struct written in the manifests, or list.Range with literal bounds")
				return
			}
			n = mulCap(n, size)
		}
		b.total = addCap(b.total, n)
		if b.total > maxCUEIterations {
			b.fail(file, x, "this comprehension brings the package to %s iterations (nested ones multiplied out), over the budget of %d a CUE manifest may use: declare fewer tools, or generate the manifest with a program", countText(b.total), maxCUEIterations)
			return
		}
		b.walk(file, x.Value, n)
	case *ast.BinaryExpr:
		b.walk(file, x.X, outer)
		b.walk(file, x.Y, outer)
	case *ast.ParenExpr:
		b.walk(file, x.X, outer)
	case *ast.UnaryExpr:
		b.walk(file, x.X, outer)
	case *ast.CallExpr:
		for _, a := range x.Args {
			b.walk(file, a, outer)
		}
	}
}

// disjuncts refuses a value that expands to more disjuncts than the budget.
func (b *cueBudget) disjuncts(file string, e ast.Expr) {
	if n := b.disj(e, 0); n > maxCUEDisjuncts {
		b.fail(file, e, "this value expands to %s disjuncts (a | b counts 2, (a | b) & (c | d) counts 4, through references too), over the budget of %d: write the alternatives out once", countText(n), maxCUEDisjuncts)
	}
}

func (b *cueBudget) disj(e ast.Expr, depth int) int {
	if depth > 64 {
		return maxCUEDisjuncts + 1 // references this deep are no manifest's
	}
	switch x := e.(type) {
	case *ast.BinaryExpr:
		switch x.Op {
		case token.OR:
			return addCap(b.disj(x.X, depth+1), b.disj(x.Y, depth+1))
		case token.AND:
			return mulCap(b.disj(x.X, depth+1), b.disj(x.Y, depth+1))
		}
	case *ast.ParenExpr:
		return b.disj(x.X, depth+1)
	case *ast.UnaryExpr:
		if x.Op == token.MUL { // a default: *a | b
			return b.disj(x.X, depth+1)
		}
	case *ast.Ident:
		return b.byName(x.Name, func(v ast.Expr) int { return b.disj(v, depth+1) }, 1)
	case *ast.SelectorExpr:
		if name, _, err := ast.LabelName(x.Sel); err == nil {
			return b.byName(name, func(v ast.Expr) int { return b.disj(v, depth+1) }, 1)
		}
	}
	return 1
}

// byName applies f to the values a label names and returns the largest
// answer; unknown, or a cycle, gives dflt.
func (b *cueBudget) byName(name string, f func(ast.Expr) int, dflt int) int {
	vals, ok := b.fields[name]
	if !ok || b.visiting[name] {
		return dflt
	}
	b.visiting[name] = true
	defer delete(b.visiting, name)
	most := 0
	for _, v := range vals {
		most = max(most, f(v))
	}
	return most
}

// size returns how many values e holds for a comprehension to range over,
// and whether that can be told from the syntax.
func (b *cueBudget) size(e ast.Expr, depth int) (int, bool) {
	if depth > 64 {
		return 0, false
	}
	switch x := e.(type) {
	case *ast.ListLit:
		n := 0
		for _, el := range x.Elts {
			switch el := el.(type) {
			case *ast.Ellipsis:
			case *ast.Comprehension:
				k, ok := b.comprehensionSize(el, depth)
				if !ok {
					return 0, false
				}
				n = addCap(n, k)
			default:
				n = addCap(n, 1)
			}
		}
		return n, true
	case *ast.StructLit:
		n := 0
		for _, d := range x.Elts {
			switch d := d.(type) {
			case *ast.Field:
				n = addCap(n, 1)
			case *ast.Comprehension:
				k, ok := b.comprehensionSize(d, depth)
				if !ok {
					return 0, false
				}
				n = addCap(n, k)
			}
		}
		return n, true
	case *ast.ParenExpr:
		return b.size(x.X, depth+1)
	case *ast.BinaryExpr:
		l, okl := b.size(x.X, depth+1)
		switch x.Op {
		case token.ADD:
			r, okr := b.size(x.Y, depth+1)
			return addCap(l, r), okl && okr
		case token.MUL:
			if k, ok := intLit(x.Y); ok && okl {
				return mulCap(l, k), true
			}
		case token.AND, token.OR:
			r, okr := b.size(x.Y, depth+1)
			return max(l, r), okl && okr
		}
	case *ast.Ident:
		known := true
		n := b.byName(x.Name, func(v ast.Expr) int {
			k, ok := b.size(v, depth+1)
			known = known && ok
			return k
		}, -1)
		return n, known && n >= 0
	case *ast.SelectorExpr:
		if name, _, err := ast.LabelName(x.Sel); err == nil {
			known := true
			n := b.byName(name, func(v ast.Expr) int {
				k, ok := b.size(v, depth+1)
				known = known && ok
				return k
			}, -1)
			return n, known && n >= 0
		}
	case *ast.CallExpr:
		// list.Range(from, to, step) with literal bounds.
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok && len(x.Args) == 3 {
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "list" {
				if name, _, _ := ast.LabelName(sel.Sel); name == "Range" {
					from, ok1 := intLit(x.Args[0])
					to, ok2 := intLit(x.Args[1])
					step, ok3 := intLit(x.Args[2])
					if ok1 && ok2 && ok3 && step != 0 {
						n := (to - from) / step
						return max(n, 0), true
					}
				}
			}
		}
	}
	return 0, false
}

// comprehensionSize is how many values a comprehension yields at most.
func (b *cueBudget) comprehensionSize(c *ast.Comprehension, depth int) (int, bool) {
	n := 1
	for _, cl := range c.Clauses {
		if fc, ok := cl.(*ast.ForClause); ok {
			k, ok := b.size(fc.Source, depth+1)
			if !ok {
				return 0, false
			}
			n = mulCap(n, k)
		}
	}
	return n, true
}

// intLit reads an integer literal, possibly negative.
func intLit(e ast.Expr) (int, bool) {
	neg := false
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.SUB {
		neg, e = true, u.X
	}
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.INT {
		return 0, false
	}
	n, err := strconv.Atoi(lit.Value)
	if err != nil || n > capLimit {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// capLimit keeps counts far above every budget from overflowing: 2^40,
// or where int has 32 bits a quarter of its range, so that the sum of two
// capped counts still fits.
const capLimit = min(1<<40, math.MaxInt>>2)

func addCap(a, b int) int { return min(a+b, capLimit) }

func mulCap(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a > capLimit/b {
		return capLimit
	}
	return a * b
}

func countText(n int) string {
	if n >= capLimit {
		return "more than a trillion"
	}
	return strconv.Itoa(n)
}
