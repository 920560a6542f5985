package registry

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/provider"
)

// ProviderSchema returns every tool rendered in the named provider form (see
// provider.Forms: "openai", "openai-responses", "openai-strict",
// "openai-strict-responses", "anthropic", "gemini", "mcp"), in registration
// order: the tools list to send that provider.
//
// Each form is rendered once and cached; later calls cost a lookup and a
// slice copy, not schema work. Registering a tool invalidates the cache, and
// so does a remote tool's withdrawal: a withdrawn tool is left out. The
// slice is the caller's; the bytes are shared and must not be modified.
//
// An unknown form gives a *provider.UnknownFormError. A tool the form cannot
// express (openai-strict: an open map param, ...) makes it fail with that
// tool's *provider.UnsupportedError (or a *provider.MultiError of them, for
// errors.As); ProviderRender still reports on the others.
func (r *Registry) ProviderSchema(form string) ([]json.RawMessage, error) {
	set, err := r.ProviderRender(form)
	if err != nil {
		return nil, err
	}
	return slices.Clone(set.Tools), nil
}

// ProviderList is ProviderSchema as one JSON array, rendered once and cached:
// a tools/list response body costs no work per request. The bytes are shared
// and must not be modified.
func (r *Registry) ProviderList(form string) (json.RawMessage, error) {
	e := r.rendered(form)
	if e.err != nil {
		return nil, e.err
	}
	return e.list, nil
}

// ProviderRender returns the cached rendering of every tool in the named form
// with its report: what each tool's form moved or dropped (Notes) and what the
// provider would refuse or degrade (Findings, as provider.Vet gives them).
// The *provider.Set is returned even when err says some tools cannot be
// rendered; it is shared and must not be modified. Only an unknown form gives
// a nil Set.
func (r *Registry) ProviderRender(form string) (*provider.Set, error) {
	e := r.rendered(form)
	return e.set, e.err
}

// rendering is one form's cached result for the first n registered tools,
// less the withdrawn ones (w, their indexes).
type rendering struct {
	n    int
	w    []int
	set  *provider.Set
	list json.RawMessage
	err  error
}

// renderCache holds a registry's renderings, one per form.
type renderCache struct {
	mu    sync.Mutex
	forms map[string]*rendering
}

func (r *Registry) rendered(form string) *rendering {
	if !provider.Known(form) {
		// Not cached: the map holds forms, not whatever names callers try.
		return &rendering{err: &provider.UnknownFormError{Name: form}}
	}
	c := &r.renders
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forms == nil {
		c.forms = make(map[string]*rendering)
	}
	// Register only appends, so a rendering of as many tools as the registry
	// holds, with the same ones withdrawn, is a rendering of all it offers.
	w := r.withdrawn()
	if e, ok := c.forms[form]; ok && e.n == len(r.tools) && slices.Equal(e.w, w) {
		return e
	}
	specs := make([]*toolreg.Spec, 0, len(r.tools)-len(w))
	for i, t := range r.tools {
		if len(w) > 0 && slices.Contains(w, i) {
			continue
		}
		specs = append(specs, t.Spec())
	}
	set, err := provider.RenderAll(form, specs)
	e := &rendering{n: len(r.tools), w: w, set: set, err: err}
	if set != nil {
		e.list = set.List()
	}
	c.forms[form] = e
	return e
}
