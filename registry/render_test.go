package registry_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/provider"
)

// renderSpec is a tool with an optional, defaulted, length-bounded param: one
// every form renders, and renders differently.
func renderSpec(name string) *toolreg.Spec {
	minLen := 3
	return &toolreg.Spec{
		Name:        name,
		Description: "The " + name + " tool.",
		Params: []*toolreg.Param{
			{Name: "customer_id", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "Customer id.", MinLength: &minLen}},
			{Name: "limit", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Description: "At most this many.", Default: json.Number("10"), HasDefault: true}},
		},
		Pos: toolreg.Pos{File: "manifests/" + name + ".yaml", Line: 1, Col: 1},
	}
}

// mapSpec has an open map param, which strict mode cannot express.
func mapSpec(name string) *toolreg.Spec {
	return &toolreg.Spec{
		Name:        name,
		Description: "Set labels.",
		Params: []*toolreg.Param{{Name: "labels", Schema: toolreg.Schema{
			Type: toolreg.TypeObject, Description: "Labels.", AdditionalProperties: &toolreg.Schema{Type: toolreg.TypeString},
		}}},
	}
}

func TestProviderSchemaRendersEveryToolInRegistrationOrder(t *testing.T) {
	t.Parallel()
	specs := []*toolreg.Spec{renderSpec("b_tool"), renderSpec("a_tool"), renderSpec("c_tool")}
	r := registryOf(t, specs...)
	for _, form := range provider.Forms() {
		t.Run(form+" lists each tool as provider.Render renders it", func(t *testing.T) {
			t.Parallel()
			got, err := r.ProviderSchema(form)
			if err != nil {
				t.Fatal(err)
			}
			var want []json.RawMessage
			for _, s := range specs {
				rd, err := provider.Render(form, s)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, rd.JSON)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			list, err := r.ProviderList(form)
			if err != nil {
				t.Fatal(err)
			}
			var items []json.RawMessage
			if err := json.Unmarshal(list, &items); err != nil {
				t.Fatalf("ProviderList is not a JSON array: %v", err)
			}
			if diff := cmp.Diff(want, items); diff != "" {
				t.Errorf("ProviderList (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProviderSchemaIsRenderedOnceAndRenderedAgainAfterRegister(t *testing.T) {
	t.Parallel()
	r := registryOf(t, renderSpec("a_tool"))
	first, err := r.ProviderSchema(provider.OpenAIStrict)
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.ProviderSchema(provider.OpenAIStrict)
	if err != nil {
		t.Fatal(err)
	}
	if &first[0][0] != &again[0][0] {
		t.Error("the second call rendered the tool again; want the cached bytes")
	}
	l1, _ := r.ProviderList(provider.OpenAIStrict)
	l2, _ := r.ProviderList(provider.OpenAIStrict)
	if &l1[0] != &l2[0] {
		t.Error("the second ProviderList built the list again; want the cached bytes")
	}
	// The slice is the caller's: changing it leaves the cache alone.
	first[0] = nil
	if again, _ = r.ProviderSchema(provider.OpenAIStrict); again[0] == nil {
		t.Error("a caller's change to the returned slice reached the cache")
	}

	if err := r.Register(toolreg.NewTool(renderSpec("b_tool"))); err != nil {
		t.Fatal(err)
	}
	after, err := r.ProviderSchema(provider.OpenAIStrict)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 2 || !bytes.Contains(after[1], []byte(`"name":"b_tool"`)) {
		t.Errorf("after Register, ProviderSchema = %s; want both tools", after)
	}
}

func TestProviderSchemaRefusesAnUnknownForm(t *testing.T) {
	t.Parallel()
	r := registryOf(t, renderSpec("a_tool"))
	_, err := r.ProviderSchema("claude")
	var ue *provider.UnknownFormError
	if !errors.As(err, &ue) || ue.Name != "claude" {
		t.Fatalf("ProviderSchema(claude) = %v, want an *UnknownFormError", err)
	}
	if set, err := r.ProviderRender("claude"); set != nil || err == nil {
		t.Errorf("ProviderRender(claude) = %v, %v; want nil and an error", set, err)
	}
}

func TestProviderSchemaSaysWhichToolsCannotBeStrictAndWhy(t *testing.T) {
	t.Parallel()
	r := registryOf(t, renderSpec("a_tool"), mapSpec("set_labels"), mapSpec("set_tags"))
	_, err := r.ProviderSchema(provider.OpenAIStrict)
	var me *provider.MultiError
	if !errors.As(err, &me) || len(me.Errs) != 2 {
		t.Fatalf("ProviderSchema = %v, want a *MultiError of two tools", err)
	}
	var ue *provider.UnsupportedError
	if !errors.As(err, &ue) || ue.Tool != "set_labels" || ue.Problems[0].Path != "params.labels.additionalProperties" {
		t.Errorf("first UnsupportedError = %+v, want set_labels at params.labels.additionalProperties", ue)
	}

	// The report still covers every tool: the one that rendered, and why the
	// others did not.
	set, err := r.ProviderRender(provider.OpenAIStrict)
	if err == nil || set == nil {
		t.Fatalf("ProviderRender = %v, %v; want the set and the error", set, err)
	}
	if len(set.Tools) != 1 {
		t.Errorf("set holds %d tools, want the one that can be strict", len(set.Tools))
	}
	var errorsFor []string
	for _, f := range set.Findings {
		if f.Severity == provider.Error {
			errorsFor = append(errorsFor, f.Tool)
		}
	}
	if diff := cmp.Diff([]string{"set_labels", "set_tags"}, errorsFor); diff != "" {
		t.Errorf("error findings (-want +got):\n%s", diff)
	}
	// The non-strict form takes the map.
	if _, err := r.ProviderSchema(provider.OpenAI); err != nil {
		t.Errorf("ProviderSchema(openai) = %v, want nil", err)
	}
}

func TestProviderSchemaIsSafeForConcurrentReaders(t *testing.T) {
	t.Parallel()
	r := registryOf(t, renderSpec("a_tool"), renderSpec("b_tool"))
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			form := provider.Forms()[i%len(provider.Forms())]
			if got, err := r.ProviderSchema(form); err != nil || len(got) != 2 {
				t.Errorf("ProviderSchema(%s) = %d tools, %v", form, len(got), err)
			}
		})
	}
	wg.Wait()
}

// benchSpecs are n tools, each with an optional defaulted param, a bounded
// string and an enum: enough for every form to do its rewriting.
func benchSpecs(n int) []*toolreg.Spec {
	specs := make([]*toolreg.Spec, n)
	for i := range specs {
		s := renderSpec(fmt.Sprintf("tool_%04d", i))
		s.Params = append(s.Params, &toolreg.Param{Name: "status", Optional: true, Schema: toolreg.Schema{
			Type: toolreg.TypeString, Description: "Status.", Enum: []any{"open", "closed"}, Format: "uri"}})
		specs[i] = s
	}
	return specs
}

// BenchmarkProviderSchema1000 renders tools/list for 1,000 tools in each form:
// "first" is the first call on a registry (the rendering), "cached" every
// later call (ProviderSchema, a slice copy) and "cached-list" the ready JSON
// array (ProviderList). The baseline in the same run is ToolsSchema, which
// returns schemas NewTool computed at startup.
func BenchmarkProviderSchema1000(b *testing.B) {
	specs := benchSpecs(1000)
	b.Run("baseline=ToolsSchema", func(b *testing.B) {
		r := registryOf(b, specs...)
		b.ReportAllocs()
		for b.Loop() {
			if len(r.ToolsSchema()) != 1000 {
				b.Fatal("short list")
			}
		}
	})
	for _, form := range provider.Forms() {
		b.Run("first/"+form, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				r := registryOf(b, specs...)
				b.StartTimer()
				if _, err := r.ProviderList(form); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("cached/"+form, func(b *testing.B) {
			r := registryOf(b, specs...)
			if _, err := r.ProviderSchema(form); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.ProviderSchema(form); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("cached-list/"+form, func(b *testing.B) {
			r := registryOf(b, specs...)
			if _, err := r.ProviderList(form); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.ProviderList(form); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
