package registry_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/registry"
)

func scopedRegistry(t testing.TB) *registry.Registry {
	t.Helper()
	r := registry.New()
	for _, s := range []*toolreg.Spec{
		{Name: "open", Description: "Anyone may call it."},
		{Name: "read_orders", Description: "Read orders.", Scopes: []string{"orders:read"}},
		{Name: "refund_order", Description: "Refund an order.", SideEffect: true, Scopes: []string{"orders:refund", "orders:read"}},
	} {
		if err := r.Register(toolreg.NewTool(s)); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func toolNames(r *registry.Registry) string {
	var ns []string
	for _, t := range r.Tools() {
		ns = append(ns, t.Name())
	}
	return strings.Join(ns, ",")
}

// A caller is offered, listed and found only the tools it may call.
func TestForPrincipalHoldsOnlyTheToolsThePrincipalMayCall(t *testing.T) {
	t.Parallel()
	r := scopedRegistry(t)
	for _, c := range []struct {
		name string
		p    *toolreg.Principal
		want string
	}{
		{"the anonymous caller", nil, "open"},
		{"a caller with no scope", &toolreg.Principal{Subject: "x"}, "open"},
		{"a reader", &toolreg.Principal{Scopes: []string{"orders:read", "unrelated"}}, "open,read_orders"},
		{"a refunder without read", &toolreg.Principal{Scopes: []string{"orders:refund"}}, "open"},
		{"a caller with every scope", &toolreg.Principal{Scopes: []string{"orders:refund", "orders:read"}}, "open,read_orders,refund_order"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := r.ForPrincipal(c.p)
			if got := toolNames(v); got != c.want {
				t.Fatalf("tools %s, want %s", got, c.want)
			}
			list, err := v.ProviderSchema("openai")
			if err != nil || len(list) != strings.Count(c.want, ",")+1 {
				t.Fatalf("the openai form lists %d tools (%v)", len(list), err)
			}
			for _, m := range v.Search(registry.Query{Text: "orders refund read"}) {
				if !c.p.Allows(m.Tool.Spec()) {
					t.Fatalf("the view's search found %s", m.Tool.Name())
				}
			}
			if _, err := v.Get("refund_order"); (err == nil) != strings.Contains(c.want, "refund_order") {
				t.Fatalf("Get(refund_order) = %v", err)
			}
		})
	}
	all := &toolreg.Principal{Scopes: []string{"orders:read", "orders:refund"}}
	if r.ForPrincipal(all) != r {
		t.Error("a caller who may call every tool gets a copy, not the registry")
	}
	reader := &toolreg.Principal{Scopes: []string{"orders:read"}}
	if r.ForPrincipal(reader) != r.ForPrincipal(&toolreg.Principal{Subject: "other", Scopes: []string{"x", "orders:read", "orders:read"}}) {
		t.Error("two callers holding the same of the registry's scopes get two views")
	}
	open := registry.New()
	open.Register(toolreg.NewTool(&toolreg.Spec{Name: "a", Description: "A."}))
	if open.ForPrincipal(nil) != open {
		t.Error("a registry without scopes is not itself for the anonymous caller")
	}
}

// A search with a principal finds only what it may call, and answers as a
// search of its ForPrincipal view does: what it finds, and what it drops as
// too loose a match, says nothing of the tools it cannot see.
func TestSearchWithAPrincipalFindsOnlyWhatItMayCall(t *testing.T) {
	t.Parallel()
	r := scopedRegistry(t)
	names := func(ms []registry.Match) string {
		var got []string
		for _, m := range ms {
			got = append(got, m.Tool.Name())
		}
		return strings.Join(got, ",")
	}
	for _, c := range []struct {
		p    *toolreg.Principal
		want string
	}{
		{nil, "read_orders,refund_order"},
		// open matches "orders" only loosely (a neighbour of "order" in
		// its description); with nothing better it may call, it is found.
		{&toolreg.Principal{}, "open"},
		{&toolreg.Principal{Scopes: []string{"orders:read"}}, "read_orders"},
	} {
		got := names(r.Search(registry.Query{Text: "orders", Principal: c.p}))
		if got != c.want {
			t.Errorf("search as %+v found %s, want %s", c.p, got, c.want)
		}
		if c.p == nil {
			continue // the nil principal of a Query keeps every tool; the view's is the anonymous caller
		}
		if view := names(r.ForPrincipal(c.p).Search(registry.Query{Text: "orders"})); view != got {
			t.Errorf("search as %+v found %s, its view's search %s", c.p, got, view)
		}
	}
}

// Views are made once per scope set, from many goroutines at once.
func TestForPrincipalIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	r := scopedRegistry(t)
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			p := &toolreg.Principal{Scopes: []string{"orders:read"}}
			if i%2 == 0 {
				p = nil
			}
			v := r.ForPrincipal(p)
			if _, err := json.Marshal(v.ToolsSchema()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
