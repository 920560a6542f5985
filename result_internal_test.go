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

// TestResultFormatIsCompiledOncePerProcess: a result's format is compiled
// once for every tool that asks it, not a JSON Schema compiler per tool.
func TestResultFormatIsCompiledOncePerProcess(t *testing.T) {
	t.Parallel()
	a := NewTool(&Spec{Name: "a", Returns: &Schema{Type: TypeString, Format: "email"}})
	b := NewTool(&Spec{Name: "b", Returns: &Schema{Type: TypeString, Format: "email"}})
	fa, fb := a.results().format, b.results().format
	if fa == nil || fa != fb {
		t.Errorf("two tools' result formats are %p and %p: want one compiled schema", fa, fb)
	}
	if a.CheckResult("not an address") == nil || a.CheckResult("a@example.com") != nil {
		t.Error("the shared format does not assert email")
	}
}
