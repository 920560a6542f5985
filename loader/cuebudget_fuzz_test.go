package loader

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"cuelang.org/go/cue/ast"
)

// budgetStepsPerNode bounds the budget's work: it sizes each label once,
// so its steps grow at most linearly with the package's syntax.
const budgetStepsPerNode = 8

// budgetFuzzLimit is the time the budget may take on one fuzz input, far
// above what a linear check of a fuzzer's few kilobytes takes even under
// the race detector, and far below what an exponential one takes.
const budgetFuzzLimit = 2 * time.Second

// FuzzCUEBudget checks the budget checker itself, on any CUE package that
// parses: its steps stay within budgetStepsPerNode per syntax node, and no
// input keeps it past budgetFuzzLimit. The seeds are every CUE file of the
// corpus and of testdata/hostile (reference chains, ladders of diamonds,
// self-references, cycles).
func FuzzCUEBudget(f *testing.F) {
	for _, glob := range []string{"testdata/hostile/*.cue", "testdata/manifests/*/*.cue", "testdata/manifests/*/*/*.cue", "../manifests/*.cue"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range files {
			b, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte("package toolreg\na: b | c\nb: a & c\nc: a | b\n"))
	f.Add([]byte("package toolreg\nx: y.x & y.x\ny: x: x.y | x.y\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		cf, ps := parseCUE("m.cue", src)
		if ps != nil {
			return
		}
		nodes := 0
		ast.Walk(cf.ast, func(ast.Node) bool { nodes++; return true }, nil)
		start := time.Now()
		// The budget stops itself at the deadline, so an input it would
		// spend hours on fails here in budgetFuzzLimit.
		b := newCUEBudget([]*cueFile{cf}, cueBound{deadline: start.Add(budgetFuzzLimit), limit: budgetFuzzLimit}, nil)
		probs := b.check()
		if d := time.Since(start); d >= budgetFuzzLimit {
			t.Fatalf("the budget took %v on a package of %d syntax nodes (%d steps), over %v: %v", d, nodes, b.steps, budgetFuzzLimit, probs)
		}
		if b.steps > budgetStepsPerNode*nodes+64 {
			t.Fatalf("the budget took %d steps on a package of %d syntax nodes, over %d per node: it sizes something more than once", b.steps, nodes, budgetStepsPerNode)
		}
	})
}

// The budget stops itself once the step's deadline passes (it looks every
// 1024 steps), refused at the declaration it was checking, rather than run
// on after the step gave up on it: here within the first 1024 of its ~6000
// steps.
func TestTheBudgetStopsAtItsDeadline(t *testing.T) {
	src := []byte("package toolreg\n\nx0: [1]\n")
	for i := 1; i <= 2000; i++ {
		src = append(src, []byte("x"+strconv.Itoa(i)+": x"+strconv.Itoa(i-1)+" + [1]\n")...)
	}
	cf, ps := parseCUE("m.cue", src)
	if ps != nil {
		t.Fatal(ps)
	}
	past := cueBound{deadline: time.Now().Add(-time.Second), limit: time.Second}
	b := newCUEBudget([]*cueFile{cf}, past, nil)
	probs := b.check()
	if len(probs) != 1 || b.steps > 1024 {
		t.Fatalf("got %d steps and %v, want a refusal within the first 1024 steps", b.steps, probs)
	}
	if got := probs[0].String(); !regexp.MustCompile(`^m\.cue:[0-9]+:1: checking this declaration against the budget of work took over 1s`).MatchString(got) {
		t.Errorf("got %q, want the declaration refused for the time its check took", got)
	}
}
