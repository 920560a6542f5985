package runner

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"sync/atomic"

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
// carries one of its own or the activation has none. The context it made
// last is kept, with the one it was made of: a dispatcher passes one
// context for a turn's calls, which then share one derived context rather
// than allocate one each.
func (a *Activation) withPrincipal(ctx context.Context) context.Context {
	if !a.hasPrincipal {
		return ctx
	}
	// Only parents of a comparable type are kept, so that this comparison,
	// equal only for two of one type, never compares uncomparable values.
	if last := a.lastCtx.Load(); last != nil && last.parent == ctx {
		return last.ctx
	}
	if _, ok := toolreg.PrincipalFrom(ctx); ok {
		return ctx
	}
	d := toolreg.WithPrincipal(ctx, a.principal)
	if reflect.TypeOf(ctx).Comparable() {
		a.lastCtx.Store(&derivedCtx{parent: ctx, ctx: d})
	}
	return d
}

// derivedCtx is a context withPrincipal made, and the one it made it of.
type derivedCtx struct{ parent, ctx context.Context }

// perActivation is t's per-activation budget, or 0 for none.
func perActivation(t *toolreg.Tool) int {
	if b := t.Spec().Budgets; b != nil {
		return b.PerActivation
	}
	return 0
}

// take counts one call of t against its per-activation budget, or refuses
// it with a *toolreg.BudgetError when the budget is used up. Safe for
// concurrent use, without a lock on the common path: each tool's count is
// an atomic counter, found in a map that is copied to add one.
func (a *Activation) take(t *toolreg.Tool, limit int) error {
	c := a.counter(t)
	if c.Add(1) > int64(limit) {
		c.Add(-1)
		return &toolreg.BudgetError{Tool: t.Name(), Budget: toolreg.BudgetPerActivation, Limit: limit}
	}
	return nil
}

// counter returns t's count of calls in the activation.
func (a *Activation) counter(t *toolreg.Tool) *atomic.Int64 {
	if m := a.used.Load(); m != nil {
		if c := (*m)[t]; c != nil {
			return c
		}
	}
	a.usedMu.Lock()
	defer a.usedMu.Unlock()
	old := a.used.Load()
	if old != nil && (*old)[t] != nil {
		return (*old)[t]
	}
	m := make(map[*toolreg.Tool]*atomic.Int64)
	if old != nil {
		maps.Copy(m, *old)
	}
	c := new(atomic.Int64)
	m[t] = c
	a.used.Store(&m)
	return c
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
	a.counter(t).Add(-1)
}
