package runner

import (
	"slices"

	"github.com/beam-agents/toolreg"
)

// SearchToolName is the name the tool-search meta-tool is declared under
// (package toolsearch). An activation that offers it names it in its
// refusals, so the model knows how to find a tool it was not shown.
const SearchToolName = "search_tools"

// WithOffered limits the activation to the tools called names: the tools its
// model was offered for this turn. RunTool and Act refuse every other name
// with a *toolreg.ToolNotOfferedError, whose ModelMessage tells the model what
// to do, before looking up the tool or its arguments: nothing runs and
// nothing is staged. Offer adds names later in the turn (tools a search
// found). The default is every tool of the pipeline; WithOffered with no
// names offers none.
//
// A read-only tool whose result lists tools it found, with a method
// FoundTools() []string (the search_tools meta-tool of package toolsearch),
// offers them, those the pipeline holds, for the rest of the turn: the model
// searched, was shown their schemas, and may call them.
func WithOffered(names ...string) ActivationOption {
	return func(a *Activation) {
		a.offered = make(map[string]bool, len(names))
		for _, n := range names {
			a.offered[n] = true
		}
	}
}

// Offer adds names to the tools the activation offers, such as those a
// search_tools call returned. It is a no-op for an activation made without
// WithOffered, which offers every tool. A name the pipeline does not hold is
// refused with a *toolreg.ToolNotFoundError and nothing is added.
func (a *Activation) Offer(names ...string) error {
	for _, n := range names {
		if _, err := a.pipeline.Get(n); err != nil {
			return err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.offered == nil {
		return nil
	}
	for _, n := range names {
		a.offered[n] = true
	}
	return nil
}

// Offered returns the names of the tools the activation offers, sorted, and
// true; or nil and false when it offers every tool of its pipeline.
func (a *Activation) Offered() ([]string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.offered == nil {
		return nil, false
	}
	out := make([]string, 0, len(a.offered))
	for n := range a.offered {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, true
}

// checkOffered refuses name when the activation is limited and does not offer
// it. The caller holds a.mu.
// offeredErr is checkOffered under the activation's lock, and takes no lock
// when the activation offers every tool.
func (a *Activation) offeredErr(name string) error {
	if a.offered == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.checkOffered(name)
}

func (a *Activation) checkOffered(name string) error {
	if a.offered == nil || a.offered[name] {
		return nil
	}
	e := &toolreg.ToolNotOfferedError{Name: name}
	if a.offered[SearchToolName] {
		e.Search = SearchToolName
	}
	return e
}

// offerFound offers the tools res says it found, those the pipeline holds.
func (a *Activation) offerFound(res any) {
	f, ok := res.(interface{ FoundTools() []string })
	if !ok || a.offered == nil {
		return
	}
	names := f.FoundTools()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.offered == nil {
		return
	}
	for _, n := range names {
		if _, err := a.pipeline.Get(n); err == nil {
			a.offered[n] = true
		}
	}
}
