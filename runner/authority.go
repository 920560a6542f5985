package runner

import (
	"context"
	"errors"
	"slices"

	"github.com/beam-agents/toolreg"
)

// Authority and limits: the scopes a manifest declares, checked against the
// caller's principal, and its per-activation budget, counted by the
// activation.

// WithPrincipal sets the activation's caller: RunTool and RunAll run with p
// as the principal of their context unless the context carries one
// (toolreg.WithPrincipal), and Act stages only tools whose scopes p holds,
// recording p in the intent (intent.Intent.Principal), where the signature
// covers it and the effector checks it again. The default is no principal:
// the anonymous caller, refused every tool that declares scopes. p is
// copied.
func WithPrincipal(p *toolreg.Principal) ActivationOption {
	return func(a *Activation) {
		a.principal = clonePrincipal(p)
		a.hasPrincipal = true
	}
}

func clonePrincipal(p *toolreg.Principal) *toolreg.Principal {
	if p == nil {
		return nil
	}
	return &toolreg.Principal{Subject: p.Subject, Scopes: slices.Clone(p.Scopes)}
}

// scopeErr refuses t to the principal of ctx (none is the anonymous caller)
// when it lacks one of t's scopes.
func scopeErr(ctx context.Context, t *toolreg.Tool) error {
	p, _ := toolreg.PrincipalFrom(ctx)
	return principalErr(p, t)
}

func principalErr(p *toolreg.Principal, t *toolreg.Tool) error {
	missing := p.Missing(t.Spec())
	if missing == nil {
		return nil
	}
	e := &toolreg.ScopeError{Tool: t.Name(), Missing: missing}
	if p != nil {
		e.Subject = p.Subject
	}
	return e
}

// withPrincipal is ctx carrying the activation's principal, unless ctx
// carries one of its own or the activation has none.
func (a *Activation) withPrincipal(ctx context.Context) context.Context {
	if !a.hasPrincipal {
		return ctx
	}
	if _, ok := toolreg.PrincipalFrom(ctx); ok {
		return ctx
	}
	return toolreg.WithPrincipal(ctx, a.principal)
}

// perActivation is t's per-activation budget, or 0 for none.
func perActivation(t *toolreg.Tool) int {
	if b := t.Spec().Budgets; b != nil {
		return b.PerActivation
	}
	return 0
}

// take counts one call of t against its per-activation budget, or refuses
// it with a *toolreg.BudgetError when the budget is used up. The caller
// holds a.mu.
func (a *Activation) take(t *toolreg.Tool, limit int) error {
	if a.used[t.Name()] >= limit {
		return &toolreg.BudgetError{Tool: t.Name(), Budget: toolreg.BudgetPerActivation, Limit: limit}
	}
	if a.used == nil {
		a.used = make(map[string]int)
	}
	a.used[t.Name()]++
	return nil
}

// takeLocked is take under a.mu.
func (a *Activation) takeLocked(t *toolreg.Tool, limit int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.take(t, limit)
}

// giveBack returns the call of t that take counted, when err says the
// function never ran for a reason the model can fix or the caller was not
// allowed: bad or oversized arguments, a missing scope. Any other outcome,
// an error of the function's own among them, was a call.
func (a *Activation) giveBack(t *toolreg.Tool, err error) {
	var (
		argErr   *toolreg.ToolArgumentError
		tooLarge *toolreg.ArgumentsTooLargeError
		scope    *toolreg.ScopeError
	)
	if err == nil || !errors.As(err, &argErr) && !errors.As(err, &tooLarge) && !errors.As(err, &scope) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.used[t.Name()]--
}
