package diff

import (
	"strings"
	"testing"
	"time"

	"github.com/beam-agents/toolreg"
)

// An added scope locks callers out (breaking); a removed one lets callers
// in (safety), which fails the pull request like a removed approval.
func TestScopeAddedIsBreakingAndRemovedIsSafety(t *testing.T) {
	t.Parallel()
	with := func(scopes ...string) *toolreg.Spec {
		s := refund()
		s.Scopes = scopes
		return s
	}
	cases := []struct {
		name     string
		old, new []string
		want     []string // "class scope" of each change
	}{
		{"added to a tool without", nil, []string{"orders:refund"}, []string{`breaking "orders:refund"`}},
		{"added beside another", []string{"orders:read"}, []string{"orders:read", "orders:refund"}, []string{`breaking "orders:refund"`}},
		{"removed", []string{"orders:refund"}, nil, []string{`safety "orders:refund"`}},
		{"swapped", []string{"orders:read"}, []string{"orders:refund"}, []string{`safety "orders:read"`, `breaking "orders:refund"`}},
		{"reordered", []string{"a", "b"}, []string{"b", "a"}, nil},
	}
	for _, c := range cases {
		var got []string
		for _, ch := range Compare([]*toolreg.Spec{with(c.old...)}, []*toolreg.Spec{with(c.new...)}).Changes {
			if ch.Path != "scopes" {
				t.Errorf("%s: change of %s: %v", c.name, ch.Path, ch)
				continue
			}
			q := ch.Message[strings.Index(ch.Message, `"`):]
			got = append(got, ch.Class.String()+" "+q[:strings.Index(q[1:], `"`)+2])
		}
		if strings.Join(got, "; ") != strings.Join(c.want, "; ") {
			t.Errorf("%s: changes %q, want %q", c.name, got, c.want)
		}
	}
}

func TestBudgetTightenedIsBreakingAndLoosenedIsSafety(t *testing.T) {
	t.Parallel()
	with := func(b *toolreg.Budgets) *toolreg.Spec {
		s := refund()
		s.Budgets = b
		return s
	}
	pe := func(calls int, w time.Duration) *toolreg.Budgets {
		return &toolreg.Budgets{PerEntity: &toolreg.WindowBudget{Calls: calls, Window: w}}
	}
	cases := []struct {
		name     string
		old, new *toolreg.Budgets
		want     Class
		path     string
	}{
		{"per_activation added", nil, &toolreg.Budgets{PerActivation: 2}, Breaking, "budgets.per_activation"},
		{"per_activation removed", &toolreg.Budgets{PerActivation: 2}, nil, Safety, "budgets.per_activation"},
		{"per_activation lowered", &toolreg.Budgets{PerActivation: 3}, &toolreg.Budgets{PerActivation: 2}, Breaking, "budgets.per_activation"},
		{"per_activation raised", &toolreg.Budgets{PerActivation: 2}, &toolreg.Budgets{PerActivation: 3}, Safety, "budgets.per_activation"},
		{"per_entity added", nil, pe(3, time.Hour), Breaking, "budgets.per_entity"},
		{"per_entity removed", pe(3, time.Hour), nil, Safety, "budgets.per_entity"},
		{"fewer calls", pe(3, time.Hour), pe(2, time.Hour), Breaking, "budgets.per_entity"},
		{"a longer window", pe(3, time.Hour), pe(3, 24*time.Hour), Breaking, "budgets.per_entity"},
		{"more calls in a shorter window", pe(3, 24*time.Hour), pe(5, time.Hour), Safety, "budgets.per_entity"},
		{"more calls in a longer window", pe(3, time.Hour), pe(10, 24*time.Hour), Breaking, "budgets.per_entity"},
	}
	for _, c := range cases {
		got := Compare([]*toolreg.Spec{with(c.old)}, []*toolreg.Spec{with(c.new)}).Changes
		if len(got) != 1 || got[0].Class != c.want || got[0].Path != c.path {
			t.Errorf("%s: changes %v, want one %s change of %s", c.name, got, c.want, c.path)
		}
	}
	if got := Compare([]*toolreg.Spec{with(pe(3, time.Hour))}, []*toolreg.Spec{with(pe(3, time.Hour))}).Changes; len(got) != 0 {
		t.Errorf("unchanged budgets: %v", got)
	}
}
