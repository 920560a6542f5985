package registry

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/editdist"
)

// Registry maps tool names to tools, in registration order. It is not safe for
// concurrent Register calls; once filled (at startup), concurrent reads are safe.
type Registry struct {
	byName map[string]*toolreg.Tool
	tools  []*toolreg.Tool
	inline map[string]bool // read-only tools another table holds; see MarkInline
	// gated indexes the remote tools, whose server may drift at run time
	// and have them withdrawn (toolreg.Tool.Withdrawn).
	gated []int
	// renders caches each provider form's rendering; see ProviderSchema.
	renders renderCache
	// search is the index Search builds on first use; see search.go.
	search searchIndex
	// views are ForPrincipal's registries; see principal.go.
	views views
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{byName: make(map[string]*toolreg.Tool)}
}

// Register adds t. A second tool with t's name is refused with a
// *toolreg.DuplicateToolError naming it and, where known, both manifest positions.
func (r *Registry) Register(t *toolreg.Tool) error {
	if prev, ok := r.byName[t.Name()]; ok {
		return &toolreg.DuplicateToolError{Name: t.Name(), First: prev.Spec().Pos, Second: t.Spec().Pos}
	}
	r.byName[t.Name()] = t
	if t.Spec().Remote != nil {
		r.gated = append(r.gated, len(r.tools))
	}
	r.tools = append(r.tools, t)
	return nil
}

// Get returns the tool called name, or a *toolreg.ToolNotFoundError naming it,
// with the registered names close to it; for a name marked with MarkInline,
// a *toolreg.ReadOnlyToolError; for a remote tool withdrawn because its
// server drifted from its manifest, a *toolreg.ToolWithdrawnError.
func (r *Registry) Get(name string) (*toolreg.Tool, error) {
	if t, ok := r.byName[name]; ok {
		if err := t.Withdrawn(); err != nil {
			return nil, err
		}
		return t, nil
	}
	if r.inline[name] {
		return nil, &toolreg.ReadOnlyToolError{Name: name}
	}
	return nil, &toolreg.ToolNotFoundError{Name: name, DidYouMean: r.near(name)}
}

// MarkInline records that the read-only tool called name exists but runs
// inline, from another table (the pipeline's), so that Get answers for it
// with a *toolreg.ReadOnlyToolError rather than calling it unknown. The table
// still does not hold it: Len, Tools and ToolsSchema leave it out. The binder
// marks every read-only tool in bindings.Bound.Effector.
func (r *Registry) MarkInline(name string) {
	if r.inline == nil {
		r.inline = make(map[string]bool)
	}
	r.inline[name] = true
}

// Len returns the number of registered tools.
func (r *Registry) Len() int { return len(r.tools) }

// Tools returns the registered tools in registration order, withdrawn remote
// tools included (see toolreg.Tool.Withdrawn). The slice is the caller's;
// the tools are shared.
func (r *Registry) Tools() []*toolreg.Tool {
	return append([]*toolreg.Tool(nil), r.tools...)
}

// ToolsSchema returns every tool's Schema, in registration order: the tools
// list to send a model provider. A withdrawn remote tool is left out.
func (r *Registry) ToolsSchema() []json.RawMessage {
	w := r.withdrawn()
	out := make([]json.RawMessage, 0, len(r.tools)-len(w))
	for i, t := range r.tools {
		if len(w) > 0 && slices.Contains(w, i) {
			continue
		}
		out = append(out, t.Schema())
	}
	return out
}

// withdrawn returns the indexes of the remote tools withdrawn now, in
// order; nil when there are none, as for a registry without remote tools.
func (r *Registry) withdrawn() []int {
	var w []int
	for _, i := range r.gated {
		if r.tools[i].Withdrawn() != nil {
			w = append(w, i)
		}
	}
	return w
}

// near returns up to three registered names within a small edit distance of
// name, nearest first.
func (r *Registry) near(name string) []string {
	type cand struct {
		name string
		d    int
	}
	limit := max(1, min(3, len(name)/3))
	var cs []cand
	var rows []int
	for _, t := range r.tools {
		n := t.Name()
		if abs(len(n)-len(name)) > limit {
			continue // the distance is at least the difference in length
		}
		var d int
		if d, rows = editdist.Levenshtein(name, n, rows); d <= limit {
			cs = append(cs, cand{n, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
