package loader

import (
	"fmt"
	"sync"
	"time"

	"github.com/beam-agents/toolreg"
)

// cueTimeout bounds the whole CUE step of one package, the one time bound
// on it: the budget of work (cuebudget.go), CUE's evaluation, and the
// decoding and checking of the tools it declares. A manifest takes
// milliseconds; the budget refuses, unevaluated, the packages that could
// run long, and this bound is the last resort for what it cannot foresee.
// A package past it is refused, naming what the step was doing and where:
// the declaration the budget was checking, the package's costliest
// construct by the budget's count, or the tool being checked. CUE's
// evaluation cannot be interrupted, so an evaluation past the bound is
// abandoned, to end on its own; the budget's check stops itself.
// SetCUETimeout (export_test.go) overrides it for tests.
var cueTimeout = 5 * time.Second

// cuePhaseHook, when not nil, is called as the CUE step of a package enters
// each phase: for tests that hold a phase past the bound.
var cuePhaseHook func(cuePhase)

// cueBound is the CUE step's time bound: its limit, and the deadline it
// gives the step that started at a time. The zero cueBound has none.
type cueBound struct {
	deadline time.Time
	limit    time.Duration
}

func (b cueBound) passed() bool { return !b.deadline.IsZero() && time.Now().After(b.deadline) }

// cuePhase is a part of the CUE step.
type cuePhase int

const (
	phaseBudget   cuePhase = iota + 1 // checking the budget of work
	phaseEvaluate                     // CUE's evaluation
	phaseDecode                       // decoding and checking the tools
)

func (p cuePhase) String() string {
	switch p {
	case phaseBudget:
		return "budget"
	case phaseEvaluate:
		return "evaluate"
	case phaseDecode:
		return "decode"
	}
	return "none"
}

// cueProgress is where the CUE step of one package is, read when the step
// runs out of time, so that the refusal names what it was doing and where.
type cueProgress struct {
	hook  func(cuePhase) // cuePhaseHook, read as the step starts
	mu    sync.Mutex
	phase cuePhase
	pos   toolreg.Pos
	what  string
}

// set records the step's phase and where it is; what says more (the
// costliest construct's count, the tool's name). A nil p records nothing.
func (p *cueProgress) set(phase cuePhase, pos toolreg.Pos, what string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	entered := p.phase != phase
	p.phase, p.pos, p.what = phase, pos, what
	p.mu.Unlock()
	if entered && p.hook != nil {
		p.hook(phase)
	}
}

func (p *cueProgress) problem(limit time.Duration) toolreg.Problem {
	p.mu.Lock()
	defer p.mu.Unlock()
	return cueTimeoutProblem(p.phase, p.pos, p.what, limit)
}

// cueTimeoutProblem is the refusal of a package whose CUE step was in
// phase, at pos, when it ran out of time.
func cueTimeoutProblem(phase cuePhase, pos toolreg.Pos, what string, limit time.Duration) toolreg.Problem {
	var msg string
	switch phase {
	default: // phaseBudget, or not started
		msg = fmt.Sprintf("checking this declaration against the budget of work took over %v, the limit on a CUE package's check: simplify what it refers to, or generate the manifest with a program", limit)
	case phaseEvaluate:
		msg = fmt.Sprintf("evaluating this CUE package took over %v, the limit on its check: simplify what it unifies, or generate the manifest with a program", limit)
		if what != "" {
			msg = fmt.Sprintf("evaluating this CUE package took over %v, the limit on its check; its costliest construct by the budget's count is this one (%s): simplify it, or generate the manifest with a program", limit, what)
		}
	case phaseDecode:
		msg = fmt.Sprintf("checking tool %q of this CUE package took over %v, the limit on its check: simplify its params", what, limit)
	}
	return toolreg.Problem{Pos: pos, Message: msg}
}

// cueResult is what the CUE step of one package found.
type cueResult struct {
	tools  []found
	probs  []toolreg.Problem
	dups   []error
	scopes map[string]toolreg.Pos // the scopes the package declares
}

// loadCUE runs the CUE step of the unit's package under cueTimeout.
func (u *unit) loadCUE(c *checker, index map[string]int) {
	files := u.cue
	u.cue = nil
	limit := cueTimeout
	bound := cueBound{deadline: time.Now().Add(limit), limit: limit}
	prog := &cueProgress{hook: cuePhaseHook, pos: toolreg.Pos{File: files[0].name}}
	done := make(chan cueResult, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- cueResult{probs: []toolreg.Problem{{Pos: toolreg.Pos{File: files[0].name},
					Message: fmt.Sprintf("internal error checking this CUE package (please report it): %v", v)}}}
			}
		}()
		done <- checkCUEPackage(c, index, files, bound, prog)
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case r := <-done:
		u.tools = append(u.tools, r.tools...)
		u.probs = append(u.probs, r.probs...)
		u.dups = append(u.dups, r.dups...)
		u.scopes = r.scopes
	case <-timer.C:
		u.probs = append(u.probs, prog.problem(limit))
	}
}

// checkCUEPackage is the CUE step of one package: the budget, CUE's
// evaluation, and each tool decoded and checked against the loader's rules.
func checkCUEPackage(c *checker, index map[string]int, files []*cueFile, bound cueBound, prog *cueProgress) cueResult {
	b := newCUEBudget(files, bound, prog)
	if ps := b.check(); ps != nil {
		return cueResult{probs: ps}
	}
	first := toolreg.Pos{File: files[0].name}
	if b.costliest.what != "" {
		prog.set(phaseEvaluate, b.costliest.pos, b.costliest.what)
	} else {
		prog.set(phaseEvaluate, first, "")
	}
	tools, ps, scopes := evalCUE(files)
	r := cueResult{probs: ps, scopes: scopes}
	byTool := map[string][]toolreg.Problem{}
	for _, p := range ps {
		byTool[p.Tool] = append(byTool[p.Tool], p)
	}
	for _, t := range tools {
		s := decodeSpec(t.root)
		s.Name = t.name
		prog.set(phaseDecode, s.Pos, shortName(t.name))
		if t.again.IsValid() {
			r.dups = append(r.dups, &toolreg.DuplicateToolError{Name: shortName(t.name), First: s.Pos, Second: t.again})
			continue
		}
		own := byTool[t.name]
		more := c.checkSpec(s, t.root, own)
		r.probs = append(r.probs, more...)
		r.tools = append(r.tools, found{spec: s, file: fileOrder(index, s.Pos.File),
			ok: len(own) == 0 && len(more) == 0, named: named(s, own), scopePos: scopePositions(s, t.root)})
	}
	return r
}
