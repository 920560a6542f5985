package toolreg_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/beam-agents/toolreg"
)

func TestAPrincipalMayCallOnlyWithEveryScope(t *testing.T) {
	t.Parallel()
	spec := &toolreg.Spec{Name: "refund", Scopes: []string{"orders:refund", "orders:read"}}
	for _, c := range []struct {
		name    string
		p       *toolreg.Principal
		missing []string
	}{
		{"no principal lacks every scope", nil, []string{"orders:refund", "orders:read"}},
		{"a principal without scopes lacks every scope", &toolreg.Principal{Subject: "ana"}, []string{"orders:refund", "orders:read"}},
		{"one scope of two is not enough", &toolreg.Principal{Scopes: []string{"orders:read"}}, []string{"orders:refund"}},
		{"a scope that only looks alike is not the scope", &toolreg.Principal{Scopes: []string{"orders:refund ", "Orders:read", "orders:read"}}, []string{"orders:refund"}},
		{"every scope, in any order and with more, is enough", &toolreg.Principal{Scopes: []string{"admin", "orders:read", "orders:refund"}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.p.Missing(spec)
			if strings.Join(got, ",") != strings.Join(c.missing, ",") {
				t.Errorf("Missing = %q, want %q", got, c.missing)
			}
			if c.p.Allows(spec) != (len(c.missing) == 0) {
				t.Errorf("Allows = %v with %q missing", c.p.Allows(spec), c.missing)
			}
		})
	}
	if !(*toolreg.Principal)(nil).Allows(&toolreg.Spec{Name: "open"}) {
		t.Error("a tool without scopes is refused to the anonymous caller")
	}
}

func TestThePrincipalTravelsInTheContext(t *testing.T) {
	t.Parallel()
	if p, ok := toolreg.PrincipalFrom(context.Background()); ok || p != nil {
		t.Fatalf("a bare context carries principal %v (%v)", p, ok)
	}
	want := &toolreg.Principal{Subject: "ana", Scopes: []string{"a"}}
	p, ok := toolreg.PrincipalFrom(toolreg.WithPrincipal(context.Background(), want))
	if !ok || p != want {
		t.Fatalf("PrincipalFrom = %v, %v; want %v", p, ok, want)
	}
	if p, ok := toolreg.PrincipalFrom(toolreg.WithPrincipal(context.Background(), nil)); !ok || p != nil {
		t.Fatalf("the anonymous principal reads back as %v, %v", p, ok)
	}
}

func TestScopeAndBudgetErrorsSayWhatAndWhen(t *testing.T) {
	t.Parallel()
	se := &toolreg.ScopeError{Tool: "refund_order", Subject: "ana", Missing: []string{"orders:refund"}}
	for _, want := range []string{`"refund_order"`, `"orders:refund"`, `"ana"`} {
		if !strings.Contains(se.Error(), want) {
			t.Errorf("ScopeError %q does not name %s", se.Error(), want)
		}
	}
	if m := se.ModelMessage(); !strings.Contains(m, `"orders:refund"`) || !strings.Contains(m, "was not run") || !strings.Contains(m, "Do not call it again") {
		t.Errorf("model message %q does not name the scope and say not to retry", m)
	}
	frees := time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)
	be := &toolreg.BudgetError{Tool: "refund_order", Budget: toolreg.BudgetPerEntity, Limit: 3, Window: 24 * time.Hour, FreesAt: frees}
	if m := be.ModelMessage(); !strings.Contains(m, "per_entity") || !strings.Contains(m, "2026-03-01T10:30:00Z") || !strings.Contains(m, "at most 3 calls per entity in 24h0m0s") {
		t.Errorf("model message %q does not name the budget and when it frees", m)
	}
	pa := &toolreg.BudgetError{Tool: "lookup", Budget: toolreg.BudgetPerActivation, Limit: 1}
	if m := pa.ModelMessage(); !strings.Contains(m, "per_activation (at most 1 call per activation)") || !strings.Contains(m, "next activation") {
		t.Errorf("model message %q does not say the budget frees in the next activation", m)
	}
	for _, err := range []error{se, be} {
		if !errors.Is(err, toolreg.ErrTool) {
			t.Errorf("%T is not toolreg.ErrTool", err)
		}
	}
}

func TestValidateRefusesScopesAndBudgetsThatCannotBeMet(t *testing.T) {
	t.Parallel()
	base := func() *toolreg.Spec {
		return &toolreg.Spec{Name: "t", Description: "T.", SideEffect: true}
	}
	for _, c := range []struct {
		name, path, msg string
		edit            func(*toolreg.Spec)
	}{
		{"a scope with a space", "scopes.0", "invalid scope", func(s *toolreg.Spec) { s.Scopes = []string{"a b"} }},
		{"a scope twice", "scopes.1", "declared twice", func(s *toolreg.Spec) { s.Scopes = []string{"a", "a"} }},
		{"no calls per entity", "budgets.per_entity.calls", "out of range", func(s *toolreg.Spec) {
			s.Budgets = &toolreg.Budgets{PerEntity: &toolreg.WindowBudget{Calls: 0, Window: time.Hour}}
		}},
		{"a window under a second", "budgets.per_entity.window", "shorter than 1s", func(s *toolreg.Spec) {
			s.Budgets = &toolreg.Budgets{PerEntity: &toolreg.WindowBudget{Calls: 1, Window: time.Millisecond}}
		}},
		{"per_entity on a read-only tool", "budgets.per_entity", "read-only", func(s *toolreg.Spec) {
			s.SideEffect = false
			s.Budgets = &toolreg.Budgets{PerEntity: &toolreg.WindowBudget{Calls: 1, Window: time.Hour}}
		}},
		{"per_activation above per_entity", "budgets.per_activation", "never be reached", func(s *toolreg.Spec) {
			s.Budgets = &toolreg.Budgets{PerActivation: 4, PerEntity: &toolreg.WindowBudget{Calls: 3, Window: time.Hour}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := base()
			c.edit(s)
			var de *toolreg.ToolDefinitionError
			if err := s.Validate(); !errors.As(err, &de) || len(de.Problems) != 1 || de.Problems[0].Path != c.path || !strings.Contains(de.Problems[0].Message, c.msg) {
				t.Fatalf("Validate = %v; want one problem at %s saying %q", s.Validate(), c.path, c.msg)
			}
		})
	}
	ok := base()
	ok.Scopes = []string{"orders:refund", "https://api.example.test/orders.write"}
	ok.Budgets = &toolreg.Budgets{PerActivation: 3, PerEntity: &toolreg.WindowBudget{Calls: 3, Window: time.Second}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a spec with valid scopes and budgets: %v", err)
	}
}
