package bindings_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
)

type vw struct {
	V int `json:"v"`
	W int `json:"w"`
}

// Bind checks bindings on every core, and reports their problems in binding
// order all the same, each binding's own in its order.
func TestBindReportsProblemsInBindingOrder(t *testing.T) {
	t.Parallel()
	var specs []*toolreg.Spec
	for i := range 60 {
		specs = append(specs, &toolreg.Spec{Name: fmt.Sprintf("t%02d", i), Description: "A tool.", Pos: pos(100 + i),
			Params: []*toolreg.Param{{Name: "v", Schema: intg(), Pos: pos(200 + i)}, {Name: "w", Schema: intg(), Pos: pos(300 + i)}}})
	}
	for round := range 10 {
		b := bindings.New(specs)
		var want []string
		for i := range 60 {
			name := fmt.Sprintf("t%02d", i)
			switch {
			case i%7 == 3: // string fields for the two integer params
				bindings.ReadOnly(b, name, func(context.Context, struct {
					V string `json:"v"`
					W string `json:"w"`
				}) (int, error) {
					return 0, nil
				})
				want = append(want, name+" params.v", name+" params.w")
			case i == 20:
				bindings.ReadOnly(b, "no_such_tool", func(context.Context, vw) (int, error) { return 0, nil })
				want = append(want, "no_such_tool ")
				bindings.ReadOnly(b, name, func(context.Context, vw) (int, error) { return 0, nil })
			case i == 40:
				bindings.ReadOnly(b, name, func(context.Context, vw) (int, error) { return 0, nil })
				bindings.ReadOnly(b, name, func(context.Context, vw) (int, error) { return 0, nil })
				want = append(want, name+" ")
			default:
				bindings.ReadOnly(b, name, func(context.Context, vw) (int, error) { return 0, nil })
			}
		}
		_, err := b.Bind()
		var de *toolreg.ToolDefinitionError
		if !errors.As(err, &de) {
			t.Fatalf("Bind() error = %v, want a *toolreg.ToolDefinitionError", err)
		}
		var got []string
		for _, p := range de.Problems {
			got = append(got, p.Tool+" "+p.Path)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("round %d: problems (-want +got):\n%s\nerror:\n%s", round, diff, err)
		}
	}
}
