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

// maxCUENesting bounds how deep the budget follows one value through its
// operators and the references it names: far deeper than any manifest, and
// the bound that keeps the check's own recursion shallow.
const maxCUENesting = 256

// cueBudget checks a package's files against the budget. It sizes each
// label once (disjOf, sizeOf), however many values refer to it, so its work
// grows with the package's syntax: a chain of values each naming the one
// before twice is 2^n paths but n labels. A reference back into a cycle it
// is sizing counts 1 disjunct and an unknown size, as an unknown name does.
type cueBudget struct {
	files    []*cueFile
	fields   map[string][]ast.Expr // each label's values, in every file
	visiting map[string]bool       // labels being extent, against cycles
	disjOf   map[string]int        // each label's disjuncts, once extent
	sizeOf   map[string]extent     // each label's size, once extent
	total    int
	probs    []toolreg.Problem

	// The CUE step's time bound (zero: none), checked every 1024 steps, and
	// where the check is, for the refusal if it passes.
	bound cueBound
	steps int
	prog  *cueProgress
	file  string   // the file of the declaration being checked
	at    ast.Node // the declaration being checked

	// costliest is the construct that asks the most of the evaluator for
	// its share of the budget: named if the evaluation runs out of time.
	costliest struct {
		pos   toolreg.Pos
		what  string
		share float64
	}
}

type extent struct {
	n     int
	known bool
}

// newCUEBudget prepares the check of files; it stops, refused, once the
// bound's deadline (if not zero) passes, reporting where it is to prog (if
// not nil).
func newCUEBudget(files []*cueFile, bound cueBound, prog *cueProgress) *cueBudget {
	b := &cueBudget{files: files, fields: map[string][]ast.Expr{}, visiting: map[string]bool{},
		disjOf: map[string]int{}, sizeOf: map[string]extent{}, bound: bound, prog: prog}
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
	return b
}

func (b *cueBudget) check() []toolreg.Problem {
	for _, f := range b.files {
		for _, d := range f.ast.Decls {
			b.file, b.at = f.name, d
			b.prog.set(phaseBudget, cuePos(d.Pos(), f.name), "")
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

// step counts one step of the check of n, depth deep in its value, and
// reports whether to go on: not once a problem is found, nor past
// maxCUENesting, nor past the deadline.
func (b *cueBudget) step(n ast.Node, depth int) bool {
	if len(b.probs) > 0 {
		return false
	}
	if depth > maxCUENesting {
		b.fail(b.file, n, "this value nests operators and references more than %d deep (through the values it names): a manifest never needs so many; write the value out", maxCUENesting)
		return false
	}
	b.steps++
	if b.steps%1024 == 0 && b.bound.passed() {
		b.probs = append(b.probs, cueTimeoutProblem(phaseBudget, cuePos(b.at.Pos(), b.file), "", b.bound.limit))
		return false
	}
	return true
}

// cost records n as the costliest construct so far if its count is the
// largest share of its budget.
func (b *cueBudget) cost(file string, n ast.Node, count, budget int, unit string) {
	if count <= 1 {
		return
	}
	if share := float64(count) / float64(budget); share > b.costliest.share {
		b.costliest.pos, b.costliest.share = cuePos(n.Pos(), file), share
		b.costliest.what = fmt.Sprintf("%s %s of the %d allowed", countText(count), unit, budget)
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
			s := b.size(fc.Source, 0)
			if len(b.probs) > 0 {
				return
			}
			if !s.known {
				b.fail(file, fc, "cannot tell how many values this comprehension ranges over, so its work cannot be bounded: range over a list or struct written in the manifests, or list.Range with literal bounds")
				return
			}
			n = mulCap(n, s.n)
		}
		b.total = addCap(b.total, n)
		if b.total > maxCUEIterations {
			b.fail(file, x, "this comprehension brings the package to %s iterations (nested ones multiplied out), over the budget of %d a CUE manifest may use: declare fewer tools, or generate the manifest with a program", countText(b.total), maxCUEIterations)
			return
		}
		b.cost(file, x, n, maxCUEIterations, "iterations")
		b.walk(file, x.Value, n)
	case *ast.BinaryExpr:
		for _, o := range operands(x) {
			b.walk(file, o, outer)
		}
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

// operands returns the operands of a chain of one operator (a | b | c),
// which the parser builds left-deep, without recursing: a long one is a
// loop, not a deep descent.
func operands(x *ast.BinaryExpr) []ast.Expr {
	var out []ast.Expr
	for {
		out = append(out, x.Y)
		l, ok := x.X.(*ast.BinaryExpr)
		if !ok || l.Op != x.Op {
			return append(out, x.X)
		}
		x = l
	}
}

// disjuncts refuses a value that expands to more disjuncts than the budget.
func (b *cueBudget) disjuncts(file string, e ast.Expr) {
	n := b.disj(e, 0)
	if len(b.probs) > 0 {
		return
	}
	if n > maxCUEDisjuncts {
		b.fail(file, e, "this value expands to %s disjuncts (a | b counts 2, (a | b) & (c | d) counts 4, through references too), over the budget of %d: write the alternatives out once", countText(n), maxCUEDisjuncts)
		return
	}
	b.cost(file, e, n, maxCUEDisjuncts, "disjuncts")
}

func (b *cueBudget) disj(e ast.Expr, depth int) int {
	if !b.step(e, depth) {
		return 1
	}
	switch x := e.(type) {
	case *ast.BinaryExpr:
		switch x.Op {
		case token.OR:
			n := 0
			for _, o := range operands(x) {
				n = addCap(n, b.disj(o, depth+1))
			}
			return n
		case token.AND:
			n := 1
			for _, o := range operands(x) {
				n = mulCap(n, b.disj(o, depth+1))
			}
			return n
		}
	case *ast.ParenExpr:
		return b.disj(x.X, depth+1)
	case *ast.UnaryExpr:
		if x.Op == token.MUL { // a default: *a | b
			return b.disj(x.X, depth+1)
		}
	case *ast.Ident:
		return b.labelDisj(x.Name, depth)
	case *ast.SelectorExpr:
		if name, _, err := ast.LabelName(x.Sel); err == nil {
			return b.labelDisj(name, depth)
		}
	}
	return 1
}

// labelDisj is the most disjuncts a value the label name holds expands to,
// extent once; an unknown label, or one being extent (a cycle), counts 1.
func (b *cueBudget) labelDisj(name string, depth int) int {
	if n, ok := b.disjOf[name]; ok {
		return n
	}
	vals, ok := b.fields[name]
	if !ok || b.visiting[name] {
		return 1
	}
	b.visiting[name] = true
	most := 0
	for _, v := range vals {
		most = max(most, b.disj(v, depth+1))
	}
	delete(b.visiting, name)
	b.disjOf[name] = most
	return most
}

// size returns how many values e holds for a comprehension to range over,
// and whether that can be told from the syntax.
func (b *cueBudget) size(e ast.Expr, depth int) extent {
	if !b.step(e, depth) {
		return extent{}
	}
	switch x := e.(type) {
	case *ast.ListLit:
		n := 0
		for _, el := range x.Elts {
			switch el := el.(type) {
			case *ast.Ellipsis:
			case *ast.Comprehension:
				k := b.comprehensionSize(el, depth)
				if !k.known {
					return extent{}
				}
				n = addCap(n, k.n)
			default:
				n = addCap(n, 1)
			}
		}
		return extent{n, true}
	case *ast.StructLit:
		n := 0
		for _, d := range x.Elts {
			switch d := d.(type) {
			case *ast.Field:
				n = addCap(n, 1)
			case *ast.Comprehension:
				k := b.comprehensionSize(d, depth)
				if !k.known {
					return extent{}
				}
				n = addCap(n, k.n)
			}
		}
		return extent{n, true}
	case *ast.ParenExpr:
		return b.size(x.X, depth+1)
	case *ast.BinaryExpr:
		switch x.Op {
		case token.ADD, token.AND, token.OR:
			s := extent{0, true}
			for _, o := range operands(x) {
				k := b.size(o, depth+1)
				if x.Op == token.ADD {
					s.n = addCap(s.n, k.n)
				} else {
					s.n = max(s.n, k.n)
				}
				s.known = s.known && k.known
			}
			return s
		case token.MUL:
			if k, ok := intLit(x.Y); ok {
				if l := b.size(x.X, depth+1); l.known {
					return extent{mulCap(l.n, k), true}
				}
			}
		}
	case *ast.Ident:
		return b.labelSize(x.Name, depth)
	case *ast.SelectorExpr:
		if name, _, err := ast.LabelName(x.Sel); err == nil {
			return b.labelSize(name, depth)
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
						return extent{max(n, 0), true}
					}
				}
			}
		}
	}
	return extent{}
}

// labelSize is the most values a value the label name holds has, extent
// once; an unknown label, or one being extent (a cycle), has an unknown
// size.
func (b *cueBudget) labelSize(name string, depth int) extent {
	if s, ok := b.sizeOf[name]; ok {
		return s
	}
	vals, ok := b.fields[name]
	if !ok || b.visiting[name] {
		return extent{}
	}
	b.visiting[name] = true
	s := extent{0, true}
	for _, v := range vals {
		k := b.size(v, depth+1)
		s.n, s.known = max(s.n, k.n), s.known && k.known
	}
	delete(b.visiting, name)
	b.sizeOf[name] = s
	return s
}

// comprehensionSize is how many values a comprehension yields at most.
func (b *cueBudget) comprehensionSize(c *ast.Comprehension, depth int) extent {
	n := 1
	for _, cl := range c.Clauses {
		if fc, ok := cl.(*ast.ForClause); ok {
			k := b.size(fc.Source, depth+1)
			if !k.known {
				return extent{}
			}
			n = mulCap(n, k.n)
		}
	}
	return extent{n, true}
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
