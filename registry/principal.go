package registry

import (
	"slices"
	"strings"
	"sync"

	"github.com/beam-agents/toolreg"
)

// maxViews bounds the views ForPrincipal keeps: one per set of the
// registry's scopes a caller holds, which a service has few of.
const maxViews = 256

// views caches ForPrincipal's registries, by the scopes that decide them.
type views struct {
	mu     sync.Mutex
	n      int // tools registered when the cache was filled
	scopes map[string]bool
	byKey  map[string]*Registry
}

// ForPrincipal returns the registry of the tools p may call: those whose
// manifest's scopes p holds every one of (toolreg.Principal.Allows; a nil
// p, the anonymous caller, holds none), in registration order. Offer a
// model this registry's tools (ProviderSchema, dispatch's tool lists), list
// and search them: a tool its user may not call is not shown to it. It is
// the registry itself when p may call every tool, and otherwise a view
// kept for the next principal holding the same of the registry's scopes.
// Register every tool first: a view holds the tools registered when it was
// made.
func (r *Registry) ForPrincipal(p *toolreg.Principal) *Registry {
	v := &r.views
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.scopes == nil || v.n != len(r.tools) {
		v.n = len(r.tools)
		v.scopes = map[string]bool{}
		v.byKey = map[string]*Registry{}
		for _, t := range r.tools {
			for _, s := range t.Spec().Scopes {
				v.scopes[s] = true
			}
		}
	}
	if len(v.scopes) == 0 {
		return r
	}
	var held []string
	if p != nil {
		for _, s := range p.Scopes {
			if v.scopes[s] {
				held = append(held, s)
			}
		}
	}
	slices.Sort(held)
	held = slices.Compact(held)
	if len(held) == len(v.scopes) {
		return r
	}
	key := strings.Join(held, "\n")
	if view, ok := v.byKey[key]; ok {
		return view
	}
	holder := &toolreg.Principal{Scopes: held}
	view := New()
	view.inline = r.inline
	for _, t := range r.tools {
		if holder.Allows(t.Spec()) {
			view.byName[t.Name()] = t
			view.tools = append(view.tools, t)
		}
	}
	if len(v.byKey) < maxViews {
		v.byKey[key] = view
	}
	return view
}
