package toolreg

import (
	"testing"

	"github.com/beam-agents/toolreg/internal/argcheck"
)

// TestResultPatternIsTheArgumentCheckersRegexp: a result's pattern is
// compiled by the one cache the argument checker uses, so 10,000 tools whose
// returns share a pattern hold one *regexp.Regexp, and a result's pattern
// matches what a param's does.
func TestResultPatternIsTheArgumentCheckersRegexp(t *testing.T) {
	t.Parallel()
	const p = `^ord_[0-9a-z]{4,12}$`
	a := NewTool(&Spec{Name: "a", Returns: &Schema{Type: TypeString, Pattern: p}})
	b := NewTool(&Spec{Name: "b", Returns: &Schema{Type: TypeString, Pattern: p}})
	ra, rb := a.results().pattern, b.results().pattern
	shared, err := argcheck.CompilePattern(p)
	if err != nil {
		t.Fatal(err)
	}
	if ra == nil || ra != rb || ra != shared {
		t.Errorf("two tools' result patterns and the argument checker's are %p, %p, %p: want one regexp", ra, rb, shared)
	}
}
