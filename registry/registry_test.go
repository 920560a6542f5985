package registry_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/registry"
)

// tool returns a contract-only tool called name, declared at file:line:1.
func tool(name, file string, line int) *toolreg.Tool {
	return toolreg.NewTool(&toolreg.Spec{
		Name:        name,
		Description: "The " + name + " tool.",
		Params: []*toolreg.Param{{
			Name:   "customer_id",
			Schema: toolreg.Schema{Type: toolreg.TypeString},
		}},
		Pos: toolreg.Pos{File: file, Line: line, Col: 1},
	})
}

// Scenario: A registered tool is resolvable and appears in tools_schema.
// In manifest terms: register the Tool of manifest lookup_customer, then Get
// returns that very Tool and ToolsSchema holds its schema.
func TestARegisteredToolIsResolvableAndAppearsInToolsSchema(t *testing.T) {
	t.Parallel()
	r := registry.New()
	lookup := tool("lookup_customer", "manifests/lookup_customer.yaml", 1)
	if err := r.Register(lookup); err != nil {
		t.Fatalf("Register(lookup_customer) = %v, want nil", err)
	}

	got, err := r.Get("lookup_customer")
	if err != nil {
		t.Fatalf("Get(lookup_customer) error = %v", err)
	}
	if got != lookup {
		t.Errorf("Get(lookup_customer) = %p, want the registered tool %p", got, lookup)
	}

	schemas := r.ToolsSchema()
	if len(schemas) != 1 {
		t.Fatalf("ToolsSchema() has %d entries, want 1", len(schemas))
	}
	if diff := cmp.Diff(string(lookup.Schema()), string(schemas[0])); diff != "" {
		t.Errorf("ToolsSchema()[0] mismatch (-want +got):\n%s", diff)
	}
	var s struct{ Name string }
	if err := json.Unmarshal(schemas[0], &s); err != nil || s.Name != "lookup_customer" {
		t.Errorf("ToolsSchema()[0] name = %q (err %v), want lookup_customer", s.Name, err)
	}
}

// Scenario: Duplicate registration is rejected.
// In manifest terms: two manifests declare refund; registering the second Tool
// fails with an error naming refund and both manifest positions, and the
// registry keeps the first.
func TestDuplicateRegistrationIsRejected(t *testing.T) {
	t.Parallel()
	r := registry.New()
	first := tool("refund", "manifests/refund.yaml", 1)
	second := tool("refund", "manifests/billing.cue", 12)
	if err := r.Register(first); err != nil {
		t.Fatalf("Register(first) = %v, want nil", err)
	}

	err := r.Register(second)
	var dup *toolreg.DuplicateToolError
	if !errors.As(err, &dup) {
		t.Fatalf("Register(second) = %v, want a *toolreg.DuplicateToolError", err)
	}
	if dup.Name != "refund" {
		t.Errorf("DuplicateToolError.Name = %q, want refund", dup.Name)
	}
	if !errors.Is(err, toolreg.ErrTool) {
		t.Errorf("errors.Is(%v, ErrTool) = false, want true", err)
	}
	for _, want := range []string{`"refund"`, "manifests/refund.yaml:1:1", "manifests/billing.cue:12:1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}

	if got, _ := r.Get("refund"); got != first {
		t.Errorf("after a refused duplicate, Get(refund) = %p, want the first tool %p", got, first)
	}
	if r.Len() != 1 || len(r.ToolsSchema()) != 1 {
		t.Errorf("after a refused duplicate, Len() = %d and ToolsSchema() has %d entries, want 1 and 1", r.Len(), len(r.ToolsSchema()))
	}
}

// A tool built in Go, not from a manifest, has no position; the duplicate error
// still names the tool.
func TestDuplicateOfToolsWithoutPositionsNamesTheTool(t *testing.T) {
	t.Parallel()
	r := registry.New()
	mk := func() *toolreg.Tool {
		return toolreg.NewTool(&toolreg.Spec{Name: "charge", Description: "Charge a card.", SideEffect: true})
	}
	if err := r.Register(mk()); err != nil {
		t.Fatal(err)
	}
	err := r.Register(mk())
	want := `toolreg: tool "charge" is already registered: tool names must be unique`
	if err == nil || err.Error() != want {
		t.Errorf("Register(second charge) = %v, want %q", err, want)
	}
}

// Scenario: Resolving an unknown tool raises.
// In manifest terms: Get("does_not_exist") on a registry holding other tools
// fails with a *toolreg.ToolNotFoundError naming does_not_exist.
func TestResolvingAnUnknownToolRaises(t *testing.T) {
	t.Parallel()
	r := registry.New()
	if err := r.Register(tool("lookup_customer", "manifests/lookup_customer.yaml", 1)); err != nil {
		t.Fatal(err)
	}

	got, err := r.Get("does_not_exist")
	if got != nil {
		t.Errorf("Get(does_not_exist) tool = %v, want nil", got)
	}
	var nf *toolreg.ToolNotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("Get(does_not_exist) error = %v, want a *toolreg.ToolNotFoundError", err)
	}
	if nf.Name != "does_not_exist" {
		t.Errorf("ToolNotFoundError.Name = %q, want does_not_exist", nf.Name)
	}
	if want := `toolreg: no tool named "does_not_exist"`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if !errors.Is(err, toolreg.ErrTool) {
		t.Errorf("errors.Is(%v, ErrTool) = false, want true", err)
	}
}

func TestGetSuggestsCloseNames(t *testing.T) {
	t.Parallel()
	r := registry.New()
	for _, name := range []string{"lookup_customer", "lookup_order", "search_orders", "refund", "send_email", "set_order", "get_order"} {
		if err := r.Register(tool(name, "m.yaml", 1)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		ask  string
		want []string
	}{
		{"a one-letter typo suggests the tool", "lookup_custmer", []string{"lookup_customer"}},
		{"a swapped case letter suggests the tool", "Refund", []string{"refund"}},
		{"a near miss of two tools suggests the nearest first", "get_orders", []string{"get_order", "set_order"}},
		{"equally near tools come in registration order", "net_order", []string{"set_order", "get_order"}},
		{"an unrelated name suggests nothing", "does_not_exist", nil},
		{"a short name allows only one edit", "re", nil},
		{"the empty name suggests nothing", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := r.Get(tt.ask)
			var nf *toolreg.ToolNotFoundError
			if !errors.As(err, &nf) {
				t.Fatalf("Get(%q) error = %v, want a *toolreg.ToolNotFoundError", tt.ask, err)
			}
			if diff := cmp.Diff(tt.want, nf.DidYouMean); diff != "" {
				t.Errorf("Get(%q) DidYouMean mismatch (-want +got):\n%s", tt.ask, diff)
			}
			if len(tt.want) > 0 && !strings.Contains(err.Error(), "did you mean") {
				t.Errorf("error %q does not offer a suggestion", err)
			}
		})
	}
}

func TestToolsAndToolsSchemaKeepRegistrationOrder(t *testing.T) {
	t.Parallel()
	r := registry.New()
	names := []string{"send_email", "lookup_customer", "refund", "search_orders"}
	for _, n := range names {
		if err := r.Register(tool(n, "m.yaml", 1)); err != nil {
			t.Fatal(err)
		}
	}

	var gotTools, gotSchemas []string
	for _, tl := range r.Tools() {
		gotTools = append(gotTools, tl.Name())
	}
	for _, raw := range r.ToolsSchema() {
		var s struct{ Name string }
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("ToolsSchema entry %s is not JSON: %v", raw, err)
		}
		gotSchemas = append(gotSchemas, s.Name)
	}
	if diff := cmp.Diff(names, gotTools); diff != "" {
		t.Errorf("Tools() order mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(names, gotSchemas); diff != "" {
		t.Errorf("ToolsSchema() order mismatch (-want +got):\n%s", diff)
	}
}

func TestToolsReturnsACopyTheCallerMayChange(t *testing.T) {
	t.Parallel()
	r := registry.New()
	for _, n := range []string{"a", "b"} {
		if err := r.Register(tool(n, "m.yaml", 1)); err != nil {
			t.Fatal(err)
		}
	}
	ts := r.Tools()
	ts[0], ts[1] = ts[1], nil
	if got := r.Tools(); len(got) != 2 || got[0].Name() != "a" || got[1].Name() != "b" {
		t.Errorf("changing the slice from Tools() changed the registry: Tools() = %v", got)
	}
}

func TestAnEmptyRegistryHasNoTools(t *testing.T) {
	t.Parallel()
	r := registry.New()
	if r.Len() != 0 || len(r.Tools()) != 0 || len(r.ToolsSchema()) != 0 {
		t.Errorf("New() has Len %d, %d tools, %d schemas; want 0, 0, 0", r.Len(), len(r.Tools()), len(r.ToolsSchema()))
	}
	if b, err := json.Marshal(r.ToolsSchema()); err != nil || string(b) != "[]" {
		t.Errorf("ToolsSchema() of an empty registry encodes as %s (err %v), want []", b, err)
	}
}

// A filled registry is read by many goroutines at once (a pipeline serving
// several activations); -race checks that reads share nothing mutable.
func TestConcurrentReadsOfAFilledRegistryAreSafe(t *testing.T) {
	t.Parallel()
	r := registry.New()
	for i := range 20 {
		if err := r.Register(tool(fmt.Sprintf("tool_%02d", i), "m.yaml", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				name := fmt.Sprintf("tool_%02d", (g+i)%20)
				if tl, err := r.Get(name); err != nil || tl.Name() != name {
					t.Errorf("Get(%s) = %v, %v", name, tl, err)
					return
				}
				if _, err := r.Get("tool_x"); err == nil {
					t.Error("Get(tool_x) succeeded, want an error")
					return
				}
				if n := len(r.ToolsSchema()); n != 20 {
					t.Errorf("ToolsSchema() has %d entries, want 20", n)
					return
				}
				_ = r.Tools()
			}
		})
	}
	wg.Wait()
}

// BenchmarkGet measures resolving a registered name, the per-call cost of the
// inline path; BenchmarkGetUnknown is the miss with its did-you-mean search,
// compared in the same run.
func BenchmarkGet(b *testing.B) {
	r := benchRegistry(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Get("tool_050"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetUnknown(b *testing.B) {
	r := benchRegistry(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Get("tool_5x0"); err == nil {
			b.Fatal("want an error")
		}
	}
}

func benchRegistry(b *testing.B) *registry.Registry {
	b.Helper()
	r := registry.New()
	for i := range 100 {
		if err := r.Register(tool(fmt.Sprintf("tool_%03d", i), "m.yaml", 1)); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

func TestANameMarkedInlineIsReadOnlyNotUnknownAndNotHeld(t *testing.T) {
	r := registry.New()
	r.MarkInline("lookup")
	_, err := r.Get("lookup")
	var ro *toolreg.ReadOnlyToolError
	if !errors.As(err, &ro) || ro.Name != "lookup" {
		t.Fatalf("Get of a name marked inline = %v, want a *toolreg.ReadOnlyToolError", err)
	}
	var nf *toolreg.ToolNotFoundError
	if _, err := r.Get("other"); !errors.As(err, &nf) {
		t.Errorf("Get of an unmarked name = %v, want a *toolreg.ToolNotFoundError", err)
	}
	if r.Len() != 0 || len(r.Tools()) != 0 || len(r.ToolsSchema()) != 0 {
		t.Errorf("a name marked inline is listed as held: Len %d", r.Len())
	}
}
