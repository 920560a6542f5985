package toolreg

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/beam-agents/toolreg/internal/argcheck"
	"github.com/beam-agents/toolreg/internal/toolbind"
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

// TestABoundToolChecksArgsWithItsBindingsChecker: the binder compiled the
// tool's argument checker already; CheckArgs on the bound tool uses it
// rather than compiling the params schema a second time, so its first call
// allocates no more than its later ones.
func TestABoundToolChecksArgsWithItsBindingsChecker(t *testing.T) {
	spec := &Spec{Name: "lookup", Params: []*Param{
		{Name: "customer_id", Schema: Schema{Type: TypeString, Description: "The customer.", Pattern: "^cus_[a-z0-9]+$"}},
		{Name: "limit", Schema: Schema{Type: TypeInteger, Description: "At most.", HasDefault: true, Default: json.Number("10")}},
	}}
	c, err := argcheck.Compile([]byte(`{"type":"object","properties":{"customer_id":{"type":"string","pattern":"^cus_[a-z0-9]+$"},"limit":{"type":"integer","default":10}},"required":["customer_id"],"additionalProperties":false}`), false)
	if err != nil {
		t.Fatal(err)
	}
	b := &toolbind.Binding{Args: c}
	args := json.RawMessage(`{"customer_id":"cus_1"}`)
	warm := newBoundTool(spec, b)
	if _, err := warm.CheckArgs(args); err != nil {
		t.Fatal(err)
	}
	if got, _ := warm.argChecker(); got != c {
		t.Errorf("the bound tool checks with %p, not its binding's Checker %p", got, c)
	}
	later := testing.AllocsPerRun(20, func() { warm.CheckArgs(args) })
	first := testing.AllocsPerRun(20, func() { newBoundTool(spec, b).CheckArgs(args) })
	if first > later+2 { // +2: the Tool itself
		t.Errorf("a bound tool's first CheckArgs allocates %v times, its later ones %v: the params schema was compiled again", first, later)
	}
	runtime.KeepAlive(c)
}
