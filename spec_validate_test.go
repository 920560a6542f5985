package toolreg_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg"
)

// A Spec built in Go meets the rules a manifest meets: an array declares its
// items, and a pattern means the same to RE2 and to ECMA-262.
func TestValidateRefusesWhatTheLoaderRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema toolreg.Schema
		path   string
		want   string
	}{
		{"an array without items", toolreg.Schema{Type: toolreg.TypeArray}, "params.p.items", "missing items"},
		{"an array of arrays without items", toolreg.Schema{Type: toolreg.TypeArray, Items: &toolreg.Schema{Type: toolreg.TypeArray}}, "params.p.items.items", "missing items"},
		{"a pattern ECMA-262 refuses", toolreg.Schema{Type: toolreg.TypeString, Pattern: `^ab\z`}, "params.p.pattern", "`\\z`"},
		{"a pattern ECMA-262 reads otherwise", toolreg.Schema{Type: toolreg.TypeString, Pattern: `^a.b$`}, "params.p.pattern", "[^\\n]"},
	}
	for _, tc := range tests {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			t.Parallel()
			s := &toolreg.Spec{Name: "t", Description: "d", Params: []*toolreg.Param{{Name: "p", Schema: tc.schema}}}
			err := s.Validate()
			var tde *toolreg.ToolDefinitionError
			if !errors.As(err, &tde) || len(tde.Problems) != 1 {
				t.Fatalf("Validate() = %v, want one problem", err)
			}
			if p := tde.Problems[0]; p.Path != tc.path || !strings.Contains(p.Message, tc.want) {
				t.Errorf("got %s: %s, want %s: ...%s...", p.Path, p.Message, tc.path, tc.want)
			}
		})
	}
	ok := &toolreg.Spec{Name: "t", Description: "d", Params: []*toolreg.Param{{Name: "p", Schema: toolreg.Schema{
		Type: toolreg.TypeArray, Items: &toolreg.Schema{Type: toolreg.TypeString, Pattern: `^[a-z]{2}(-[A-Z]{2})?$`}}}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate() of a portable array param = %v", err)
	}
}

// TestValidateChecksReturns: a hand-built Spec's returns is held to the
// rules of a param's schema, each problem at its path under returns.
func TestValidateChecksReturns(t *testing.T) {
	t.Parallel()
	s := &toolreg.Spec{Name: "t", Description: "A tool.", Pos: toolreg.Pos{File: "t.go", Line: 3},
		Returns: &toolreg.Schema{Type: toolreg.TypeObject, Properties: []*toolreg.Param{
			{Name: "n", Schema: toolreg.Schema{Type: toolreg.TypeInteger, MultipleOf: json.Number("-2")}},
			{Name: "xs", Schema: toolreg.Schema{Type: toolreg.TypeArray}},
			{Name: "k", Schema: toolreg.Schema{Type: "text"}},
		}}}
	err := s.Validate()
	var de *toolreg.ToolDefinitionError
	if !errors.As(err, &de) {
		t.Fatalf("Validate() = %v, want a *toolreg.ToolDefinitionError", err)
	}
	var paths []string
	for _, p := range de.Problems {
		paths = append(paths, p.Path)
	}
	want := []string{"returns.properties.n.multipleOf", "returns.properties.xs.items", "returns.properties.k.type"}
	if !slices.Equal(paths, want) {
		t.Errorf("problem paths %v, want %v (%v)", paths, want, err)
	}
}
