package toolreg_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
)

func searchSpec(strict bool) *toolreg.Spec {
	return &toolreg.Spec{
		Name: "search", Description: "Search.", Strict: strict,
		Params: []*toolreg.Param{
			{Name: "query", Schema: toolreg.Schema{Type: toolreg.TypeString}},
			{Name: "limit", Schema: toolreg.Schema{Type: toolreg.TypeInteger, HasDefault: true, Default: json.Number("10"), Minimum: "1"}},
			{Name: "exact", Schema: toolreg.Schema{Type: toolreg.TypeBoolean}, Optional: true},
		},
	}
}

func TestCheckArgsNormalizesToCanonicalJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		strict bool
		args   string
		want   string
	}{
		{"defaults are applied", false, `{"query":"ünï"}`, `{"limit":10,"query":"ünï"}`},
		{"lax values are coerced", false, `{"exact":"yes","limit":"5","query":"q"}`, `{"exact":true,"limit":5,"query":"q"}`},
		{"null for optional params is dropped and the default applies", false, `{"query":"q","limit":null,"exact":null}`, `{"limit":10,"query":"q"}`},
		{"strict keeps null-as-absent", true, `{"query":"q","exact":null}`, `{"limit":10,"query":"q"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := toolreg.NewTool(searchSpec(tt.strict)).CheckArgs(json.RawMessage(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("CheckArgs(%s) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestCheckArgsListsEveryFailingPath(t *testing.T) {
	t.Parallel()
	tool := toolreg.NewTool(searchSpec(true))
	_, err := tool.CheckArgs(json.RawMessage(`{"limit":"5","exact":1,"extra":true}`))
	var ae *toolreg.ToolArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("CheckArgs = %v, want *ToolArgumentError", err)
	}
	want := []toolreg.ArgProblem{
		{Path: "/exact", Want: "boolean", Got: "1"},
		{Path: "/extra", Want: "only known parameters (exact, limit, query)", Got: "an unknown parameter"},
		{Path: "/limit", Want: "integer", Got: `"5"`},
		{Path: "/query", Want: "string (required)", Got: "nothing"},
	}
	if diff := cmp.Diff(want, ae.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if ae.Tool != "search" || !errors.Is(err, toolreg.ErrTool) {
		t.Errorf("error %v does not name the tool or wrap ErrTool", err)
	}
}

func TestCheckArgsRefusesANumberCanonicalJSONCannotWrite(t *testing.T) {
	t.Parallel()
	tool := toolreg.NewTool(&toolreg.Spec{Name: "scale", Description: "Scale.", Params: []*toolreg.Param{
		{Name: "factor", Schema: toolreg.Schema{Type: toolreg.TypeNumber}},
	}})
	_, err := tool.CheckArgs(json.RawMessage(`{"factor":1e400}`))
	var ae *toolreg.ToolArgumentError
	if !errors.As(err, &ae) || len(ae.Problems) != 1 || ae.Problems[0].Path != "/factor" {
		t.Fatalf("CheckArgs = %v, want a *ToolArgumentError at /factor", err)
	}
}
