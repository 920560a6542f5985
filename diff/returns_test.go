package diff

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
)

// receipt is refund() with a result contract: {refund_id, amount <= 500,
// status in {done, pending}, note optional}.
func receipt() *toolreg.Spec {
	s := refund()
	s.Returns = &toolreg.Schema{Type: toolreg.TypeObject, Properties: []*toolreg.Param{
		{Name: "refund_id", Schema: toolreg.Schema{Type: toolreg.TypeString}},
		{Name: "amount", Schema: toolreg.Schema{Type: toolreg.TypeNumber, Maximum: json.Number("500")}},
		{Name: "status", Schema: toolreg.Schema{Type: toolreg.TypeString, Enum: []any{"done", "pending"}}},
		{Name: "note", Optional: true, Schema: toolreg.Schema{Type: toolreg.TypeString}},
	}}
	return s
}

// TestCompareClassifiesResultChangesForConsumers: a result is read, so what
// would be compatible for a param (a new enum value, a loosened bound) can
// break a consumer, and the other way round.
func TestCompareClassifiesResultChangesForConsumers(t *testing.T) {
	t.Parallel()
	rows := []row{
		{"an unchanged result reports nothing", func(s *toolreg.Spec) {}, nil},
		{"a removed result field is breaking", func(s *toolreg.Spec) { s.Returns.Properties = s.Returns.Properties[1:] }, []string{"breaking returns.properties.refund_id"}},
		{"a retyped result field is breaking", func(s *toolreg.Spec) { s.Returns.Properties[1].Type = toolreg.TypeString }, []string{"breaking returns.properties.amount.type"}},
		{"a newly optional result field is breaking", func(s *toolreg.Spec) { s.Returns.Properties[0].Optional = true }, []string{"breaking returns.properties.refund_id"}},
		{"a newly required result field is compatible", func(s *toolreg.Spec) { s.Returns.Properties[3].Optional = false }, []string{"compatible returns.properties.note"}},
		{"an added result field is compatible", func(s *toolreg.Spec) {
			s.Returns.Properties = append(s.Returns.Properties, &toolreg.Param{Name: "currency", Schema: toolreg.Schema{Type: toolreg.TypeString}})
		}, []string{"compatible returns.properties.currency"}},
		{"an added enum value is breaking for a result", func(s *toolreg.Spec) {
			s.Returns.Properties[2].Enum = append(s.Returns.Properties[2].Enum, "failed")
		}, []string{"breaking returns.properties.status.enum"}},
		{"a removed enum value is compatible for a result", func(s *toolreg.Spec) { s.Returns.Properties[2].Enum = []any{"done"} }, []string{"compatible returns.properties.status.enum"}},
		{"a raised maximum is breaking for a result", func(s *toolreg.Spec) { s.Returns.Properties[1].Maximum = "1000" }, []string{"breaking returns.properties.amount.maximum"}},
		{"a lowered maximum is compatible for a result", func(s *toolreg.Spec) { s.Returns.Properties[1].Maximum = "100" }, []string{"compatible returns.properties.amount.maximum"}},
		{"a result that stops being an object is breaking", func(s *toolreg.Spec) { s.Returns = &toolreg.Schema{Type: toolreg.TypeString} }, []string{"breaking returns.type"}},
		{"removing returns is breaking", func(s *toolreg.Spec) { s.Returns = nil }, []string{"breaking returns"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			n := receipt()
			r.change(n)
			var got []string
			for _, c := range Compare([]*toolreg.Spec{receipt()}, []*toolreg.Spec{n}).Changes {
				got = append(got, c.Class.String()+" "+c.Path)
			}
			if diff := cmp.Diff(r.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
	// Declaring returns where there was none is compatible.
	got := Compare([]*toolreg.Spec{refund()}, []*toolreg.Spec{receipt()}).Changes
	if len(got) != 1 || got[0].Class != Compatible || got[0].Path != "returns" {
		t.Errorf("declaring returns: %v, want one compatible change", got)
	}
}

// TestAResultChangeReadsAsOneInTextAndMarkdown: the rendered report names
// the result field and says why it breaks consumers.
func TestAResultChangeReadsAsOneInTextAndMarkdown(t *testing.T) {
	t.Parallel()
	n := receipt()
	n.Returns.Properties = n.Returns.Properties[1:]
	r := Compare([]*toolreg.Spec{receipt()}, []*toolreg.Spec{n})
	var text, md strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{text.String(), md.String()} {
		if !strings.Contains(out, "returns.properties.refund_id") || !strings.Contains(out, "result field removed: consumers that read it find nothing") {
			t.Errorf("report does not name the removed result field:\n%s", out)
		}
	}
}
