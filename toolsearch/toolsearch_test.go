package toolsearch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/provider"
	"github.com/beam-agents/toolreg/runner"
	"github.com/beam-agents/toolreg/toolsearch"
)

var update = flag.Bool("update", false, "rewrite the golden files")

type trackArgs struct {
	TrackingNumber string `json:"tracking_number"`
}
type orderArgs struct {
	OrderID string `json:"order_id"`
}
type weatherArgs struct {
	City string `json:"city"`
}

// agent binds testdata/tools.yaml and search_tools in a pipeline process,
// answering searches in form; tracked counts track_shipment's calls.
type agent struct {
	bound   *bindings.Bound
	tracked atomic.Int64
}

func newAgent(t *testing.T, form string) *agent {
	t.Helper()
	specs, err := loader.Load("testdata/tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{}
	b := bindings.New(append(specs, toolsearch.Spec()), bindings.PipelineOnly())
	bindings.ReadOnly(b, "track_shipment", func(_ context.Context, x trackArgs) (string, error) {
		a.tracked.Add(1)
		return "in transit: " + x.TrackingNumber, nil
	})
	bindings.ReadOnly(b, "lookup_order", func(_ context.Context, x orderArgs) (string, error) { return "shipped", nil })
	bindings.ReadOnly(b, "get_weather", func(_ context.Context, x weatherArgs) (string, error) { return "rain", nil })
	if err := toolsearch.Bind(b, form); err != nil {
		t.Fatal(err)
	}
	if a.bound, err = b.Bind(); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestSpecIsAValidReadOnlyManifest(t *testing.T) {
	t.Parallel()
	s := toolsearch.Spec()
	if s.Name != toolsearch.Name || s.SideEffect {
		t.Errorf("Spec: name %q (want %q), side effect %v", s.Name, toolsearch.Name, s.SideEffect)
	}
	if name := runner.SearchToolName; name != s.Name {
		t.Errorf("runner.SearchToolName is %q, the manifest says %q", name, s.Name)
	}
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
	if toolsearch.Spec() == s {
		t.Error("Spec returned the same *Spec twice: a caller could change another's")
	}
}

// The meta-tool's answer, in two provider forms, as that provider's tools
// list takes it: golden files, and each tool decoded by the provider's own
// SDK.
func TestSearchToolsAnswersInTheCallersProviderForm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		form string
		sdk  func(raw json.RawMessage) (name string, err error)
	}{
		{provider.OpenAI, func(raw json.RawMessage) (string, error) {
			var p openai.ChatCompletionToolUnionParam
			if err := json.Unmarshal(raw, &p); err != nil {
				return "", err
			}
			if p.OfFunction == nil {
				return "", errors.New("not a function tool")
			}
			return p.OfFunction.Function.Name, nil
		}},
		{provider.Anthropic, func(raw json.RawMessage) (string, error) {
			var p anthropic.ToolParam
			if err := json.Unmarshal(raw, &p); err != nil {
				return "", err
			}
			if p.InputSchema.Properties == nil {
				return "", errors.New("no input_schema properties")
			}
			return p.Name, nil
		}},
	} {
		t.Run(tc.form, func(t *testing.T) {
			t.Parallel()
			a := newAgent(t, tc.form)
			act := runner.NewActivation(a.bound.Pipeline, []byte("k"), 1, runner.WithOffered(toolsearch.Name))
			res, err := act.RunTool(context.Background(), toolsearch.Name, json.RawMessage(`{"query":"where is my package, and money back","limit":2}`))
			if err != nil {
				t.Fatal(err)
			}
			compact, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			var indented bytes.Buffer
			if err := json.Indent(&indented, compact, "", "  "); err != nil {
				t.Fatal(err)
			}
			got := indented.Bytes()
			golden := filepath.Join("testdata", "search_tools."+tc.form+".golden")
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)+"\n"); diff != "" {
				t.Errorf("search_tools answer (-want +got):\n%s", diff)
			}
			var body struct{ Tools []json.RawMessage }
			if err := json.Unmarshal(compact, &body); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, raw := range body.Tools {
				name, err := tc.sdk(raw)
				if err != nil {
					t.Fatalf("the %s SDK refuses %s: %v", tc.form, raw, err)
				}
				names = append(names, name)
				// Exactly the provider's rendering of the manifest.
				spec, _ := a.bound.Pipeline.Get(name)
				r, err := provider.Render(tc.form, spec.Spec())
				if err != nil || !bytes.Equal(r.JSON, raw) {
					t.Errorf("%s: answer differs from provider.Render: %v\n%s\n%s", name, err, raw, r.JSON)
				}
			}
			if want := []string{"refund_payment", "track_shipment"}; !slices.Equal(names, want) {
				t.Errorf("found %v, want %v", names, want)
			}
		})
	}
}

// The turn offered only search_tools; a call of track_shipment is refused
// until the model has found it, then runs; lookup_order, never found, stays
// refused.
func TestAToolFoundBySearchIsOfferedForTheRestOfTheTurn(t *testing.T) {
	t.Parallel()
	a := newAgent(t, provider.OpenAI)
	ctx := context.Background()
	act := runner.NewActivation(a.bound.Pipeline, []byte("k"), 1, runner.WithClock(time.Now), runner.WithOffered(toolsearch.Name))
	call := json.RawMessage(`{"tracking_number":"1Z999"}`)
	var refused *toolreg.ToolNotOfferedError
	if _, err := act.RunTool(ctx, "track_shipment", call); !errors.As(err, &refused) || refused.Search != toolsearch.Name {
		t.Fatalf("before the search: RunTool = %v, want a refusal naming search_tools", err)
	}
	if _, err := act.RunTool(ctx, toolsearch.Name, json.RawMessage(`{"query":"track a package"}`)); err != nil {
		t.Fatal(err)
	}
	if got, err := act.RunTool(ctx, "track_shipment", call); err != nil || got != "in transit: 1Z999" {
		t.Errorf("after the search: RunTool = %v, %v", got, err)
	}
	if _, err := act.RunTool(ctx, "lookup_order", json.RawMessage(`{"order_id":"o"}`)); !errors.As(err, &refused) {
		t.Errorf("lookup_order, never found: RunTool = %v, want a refusal", err)
	}
	if _, err := act.Act("charge_card", json.RawMessage(`{"customer_id":"c","amount":5}`)); !errors.As(err, &refused) {
		t.Errorf("charge_card, never found: Act = %v, want a refusal", err)
	}
	if n := a.tracked.Load(); n != 1 {
		t.Errorf("track_shipment ran %d times, want 1", n)
	}
}

func TestSearchToolsFilters(t *testing.T) {
	t.Parallel()
	a := newAgent(t, provider.Anthropic)
	run := func(args string) []string {
		t.Helper()
		res, err := a.bound.Pipeline.Tools()[len(a.bound.Pipeline.Tools())-1].Call(context.Background(), json.RawMessage(args))
		if err != nil {
			t.Fatalf("search_tools(%s) = %v", args, err)
		}
		return res.(toolsearch.Result).FoundTools()
	}
	for _, name := range run(`{"query":"refund a card payment","read_only":true}`) {
		if name == "refund_payment" || name == "charge_card" {
			t.Errorf("read_only search found %s, which has side effects", name)
		}
	}
	if got := run(`{"query":"card","tags":["billing"]}`); !slices.Equal(got, []string{"charge_card", "refund_payment"}) && !slices.Equal(got, []string{"refund_payment", "charge_card"}) {
		t.Errorf("tag billing found %v", got)
	}
	if got := run(`{"query":"search tools find tools"}`); slices.Contains(got, toolsearch.Name) {
		t.Errorf("search_tools found itself: %v", got)
	}
	// Its arguments are checked like any tool's.
	_, err := a.bound.Pipeline.Tools()[len(a.bound.Pipeline.Tools())-1].Call(context.Background(), json.RawMessage(`{"query":"x","limit":500}`))
	var argErr *toolreg.ToolArgumentError
	if !errors.As(err, &argErr) || !strings.Contains(argErr.ModelMessage(), "limit") {
		t.Errorf("limit 500: %v, want a *toolreg.ToolArgumentError on limit", err)
	}
}

func TestWithFoundHearsWhatWasFound(t *testing.T) {
	t.Parallel()
	a := newAgent(t, provider.MCP)
	var heard []string
	ctx := toolsearch.WithFound(context.Background(), func(names []string) { heard = append(heard, names...) })
	st, err := a.bound.Pipeline.Get(toolsearch.Name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Call(ctx, json.RawMessage(`{"query":"weather forecast"}`)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(heard, []string{"get_weather"}) {
		t.Errorf("WithFound heard %v, want [get_weather]", heard)
	}
}

func TestBindRefusals(t *testing.T) {
	t.Parallel()
	t.Run("an unknown form", func(t *testing.T) {
		t.Parallel()
		b := bindings.New([]*toolreg.Spec{toolsearch.Spec()})
		var uf *provider.UnknownFormError
		if err := toolsearch.Bind(b, "openia"); !errors.As(err, &uf) {
			t.Errorf("Bind(openia) = %v, want *provider.UnknownFormError", err)
		}
	})
	t.Run("a binder without search_tools' manifest", func(t *testing.T) {
		t.Parallel()
		b := bindings.New(nil)
		if err := toolsearch.Bind(b, provider.OpenAI); err != nil {
			t.Fatal(err)
		}
		_, err := b.Bind()
		if err == nil || !strings.Contains(err.Error(), "search_tools") {
			t.Errorf("Bind without the manifest = %v, want a refusal naming search_tools", err)
		}
	})
}
