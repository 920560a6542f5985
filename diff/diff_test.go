package diff

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
)

func ptr[T any](v T) *T { return &v }

// refund is the base contract each row of the table changes.
func refund() *toolreg.Spec {
	return &toolreg.Spec{
		Name:        "refund_order",
		Description: "Refund an order.",
		SideEffect:  true,
		Pos:         toolreg.Pos{File: "refund.yaml", Line: 1, Col: 1},
		Params: []*toolreg.Param{
			{Name: "order_id", Schema: toolreg.Schema{Type: toolreg.TypeString, MinLength: ptr(3)}},
			{Name: "amount", Schema: toolreg.Schema{Type: toolreg.TypeNumber, Minimum: json.Number("0.01"), Maximum: json.Number("500")}},
			{Name: "reason", Schema: toolreg.Schema{Type: toolreg.TypeString, Enum: []any{"duplicate", "damaged", "other"},
				Default: "other", HasDefault: true}},
			{Name: "notify", Optional: true, Schema: toolreg.Schema{Type: toolreg.TypeBoolean}},
			{Name: "tags", Optional: true, Schema: toolreg.Schema{Type: toolreg.TypeArray, Items: &toolreg.Schema{Type: toolreg.TypeString}}},
		},
	}
}

type row struct {
	name   string
	change func(s *toolreg.Spec)
	want   []string // "class path"
}

func TestCompareClassifiesEachChange(t *testing.T) {
	t.Parallel()
	rows := []row{
		{"an unchanged contract reports nothing", func(s *toolreg.Spec) {}, nil},
		{"flipping side_effect to false is a safety change", func(s *toolreg.Spec) { s.SideEffect = false }, []string{"safety side_effect"}},
		{"a description edit is compatible", func(s *toolreg.Spec) { s.Description = "Refund a paid order." }, []string{"compatible description"}},
		{"a removed param is breaking", func(s *toolreg.Spec) { s.Params = s.Params[1:] }, []string{"breaking params.order_id"}},
		{"a new required param is breaking", func(s *toolreg.Spec) {
			s.Params = append(s.Params, &toolreg.Param{Name: "currency", Schema: toolreg.Schema{Type: toolreg.TypeString}})
		}, []string{"breaking params.currency"}},
		{"a new optional param is compatible", func(s *toolreg.Spec) {
			s.Params = append(s.Params, &toolreg.Param{Name: "memo", Optional: true, Schema: toolreg.Schema{Type: toolreg.TypeString}})
		}, []string{"compatible params.memo"}},
		{"a changed type is breaking", func(s *toolreg.Spec) { s.Params[1].Type = toolreg.TypeInteger }, []string{"breaking params.amount.type"}},
		{"a removed enum value is breaking", func(s *toolreg.Spec) { s.Params[2].Enum = []any{"duplicate", "other"} }, []string{"breaking params.reason.enum"}},
		{"an added enum value is compatible", func(s *toolreg.Spec) { s.Params[2].Enum = append(s.Params[2].Enum, "late") }, []string{"compatible params.reason.enum"}},
		{"a lowered maximum is breaking", func(s *toolreg.Spec) { s.Params[1].Maximum = json.Number("100") }, []string{"breaking params.amount.maximum"}},
		{"a raised maximum is compatible", func(s *toolreg.Spec) { s.Params[1].Maximum = json.Number("1000") }, []string{"compatible params.amount.maximum"}},
		{"a raised minLength is breaking", func(s *toolreg.Spec) { s.Params[0].MinLength = ptr(5) }, []string{"breaking params.order_id.minLength"}},
		{"a removed minimum is compatible", func(s *toolreg.Spec) { s.Params[1].Minimum = "" }, []string{"compatible params.amount.minimum"}},
		{"an added pattern is breaking", func(s *toolreg.Spec) { s.Params[0].Pattern = "^o-" }, []string{"breaking params.order_id.pattern"}},
		{"a changed default is breaking", func(s *toolreg.Spec) { s.Params[2].Default = "duplicate" }, []string{"breaking params.reason.default"}},
		{"an optional param made required is breaking", func(s *toolreg.Spec) { s.Params[3].Optional = false }, []string{"breaking params.notify"}},
		{"a nested items type change is breaking", func(s *toolreg.Spec) { s.Params[4].Items.Type = toolreg.TypeInteger }, []string{"breaking params.tags.items.type"}},
		{"strict turned on is breaking", func(s *toolreg.Spec) { s.Strict = true }, []string{"breaking strict"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			n := refund()
			r.change(n)
			var got []string
			for _, c := range Compare([]*toolreg.Spec{refund()}, []*toolreg.Spec{n}).Changes {
				got = append(got, c.Class.String()+" "+c.Path)
			}
			if diff := cmp.Diff(r.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
}

// side_effect flipped false to true is a safety change too: the issue says
// either way; the table above flips it only true to false.
func TestFlippingSideEffectToTrueIsASafetyChange(t *testing.T) {
	t.Parallel()
	old := refund()
	old.SideEffect = false
	r := Compare([]*toolreg.Spec{old}, []*toolreg.Spec{refund()})
	if len(r.Changes) != 1 || r.Changes[0].Class != Safety || r.Changes[0].Path != "side_effect" ||
		!strings.Contains(r.Changes[0].Message, "flipped false to true") {
		t.Fatalf("changes = %v, want one safety change of side_effect", r.Changes)
	}
}

func TestCompareToolsAddedRemovedRenamed(t *testing.T) {
	t.Parallel()
	lookup := &toolreg.Spec{Name: "lookup_order", Description: "Look up an order.",
		Params: []*toolreg.Param{{Name: "order_id", Schema: toolreg.Schema{Type: toolreg.TypeString}}}}
	renamed := *lookup
	renamed.Name = "get_order"
	other := &toolreg.Spec{Name: "search_kb", Description: "Search the knowledge base."}

	t.Run("a removed tool is breaking and a new one compatible", func(t *testing.T) {
		r := Compare([]*toolreg.Spec{lookup}, []*toolreg.Spec{other})
		got := r.Changes
		if len(got) != 2 || got[0].Tool != "lookup_order" || got[0].Class != Breaking || got[1].Tool != "search_kb" || got[1].Class != Compatible {
			t.Fatalf("changes = %v", got)
		}
		if w, _ := r.Worst(); w != Breaking {
			t.Errorf("Worst = %v, want breaking", w)
		}
	})
	t.Run("a tool under a new name with the same contract is a breaking rename", func(t *testing.T) {
		got := Compare([]*toolreg.Spec{lookup}, []*toolreg.Spec{&renamed}).Changes
		if len(got) != 1 || got[0].Class != Breaking || !strings.Contains(got[0].Message, `renamed to "get_order"`) {
			t.Fatalf("changes = %v", got)
		}
	})
}

func TestWriteTextAndMarkdown(t *testing.T) {
	t.Parallel()
	n := refund()
	n.SideEffect = false
	n.Params[1].Maximum = json.Number("100")
	n.Params[1].Pos = toolreg.Pos{File: "refund.yaml", Line: 9, Col: 5}
	r := Compare([]*toolreg.Spec{refund()}, []*toolreg.Spec{n})

	var text strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	wantText := `safety: refund.yaml:1:1: refund_order: side_effect: side_effect flipped true to false: an effect would run inline, where a retried activation repeats it; make sure the tool really changes nothing
breaking: refund.yaml:9:5: refund_order: params.amount.maximum: constraint tightened from 500 to 100
1 safety, 1 breaking, 0 compatible
`
	if diff := cmp.Diff(wantText, text.String()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}

	var md strings.Builder
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"**A tool's `side_effect` flag changed.",
		"| Class | Tool | Field | Change | Where |",
		"| **breaking** | `refund_order` | `params.amount.maximum` | constraint tightened from 500 to 100 | refund.yaml:9:5 |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// Defaults and enum values compare by their JSON, not their Go values: the
// same JSON value may come as another Go type (a json.Number from one
// manifest, an int64 from another) or as a slice, which == cannot compare.
func TestDefaultsCompareAsJSON(t *testing.T) {
	t.Parallel()
	o, n := refund(), refund()
	o.Params[2].Default, n.Params[2].Default = json.Number("1"), int64(1)
	o.Params[2].Enum, n.Params[2].Enum = []any{json.Number("1"), "other"}, []any{"other", int64(1)}
	o.Params[4].Default, n.Params[4].Default = []any{"a"}, []any{"a"}
	o.Params[4].HasDefault, n.Params[4].HasDefault = true, true
	if got := Compare([]*toolreg.Spec{o}, []*toolreg.Spec{n}).Changes; len(got) != 0 {
		t.Errorf("equal defaults and enums reported as changes: %v", got)
	}
	n.Params[4].Default = []any{"a", "b"}
	got := Compare([]*toolreg.Spec{o}, []*toolreg.Spec{n}).Changes
	if len(got) != 1 || got[0].Path != "params.tags.default" || !strings.Contains(got[0].Message, `from ["a"] to ["a","b"]`) {
		t.Errorf("changes = %v, want one change of params.tags.default from [\"a\"] to [\"a\",\"b\"]", got)
	}
}
