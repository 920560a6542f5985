package provider_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/provider"
)

// stringEnum returns n distinct string values of exactly size characters.
func stringEnum(n, size int) []any {
	vs := make([]any, n)
	for i := range vs {
		v := fmt.Sprintf("v%d_", i)
		vs[i] = v + strings.Repeat("x", size-len(v))
	}
	return vs
}

func enumTool(enums ...[]any) *toolreg.Spec {
	s := &toolreg.Spec{Name: "pick", Description: "Pick one.", Pos: toolreg.Pos{File: "m.yaml", Line: 1, Col: 1}}
	for i, e := range enums {
		s.Params = append(s.Params, &toolreg.Param{Name: fmt.Sprintf("p%d", i), Pos: toolreg.Pos{File: "m.yaml", Line: 3 + i, Col: 3},
			Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "A choice.", Enum: e}})
	}
	return s
}

// OpenAI's Structured Outputs guide ("Limitations on total string size" and
// "Limitations on enum size"): a string enum of more than 250 values may hold
// at most 15,000 characters in all, and the property names, enum values and
// const values of a schema at most 120,000.
func TestStrictFormRefusesSchemasOverOpenAIsStringLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		spec     *toolreg.Spec
		wantPath string
		wantMsg  string // empty: the form takes the tool
	}{
		{"251 string values of 15,060 characters are refused", enumTool(stringEnum(251, 60)),
			"params.p0", "251 string enum values of 15060 characters in all"},
		{"251 string values of exactly 15,000 characters are taken", enumTool(append(stringEnum(250, 60), "")),
			"", ""},
		{"250 string values of 25,000 characters are taken: the cap is for more than 250", enumTool(stringEnum(250, 100)),
			"", ""},
		{"names and enum values over 120,000 characters in all are refused",
			enumTool(stringEnum(200, 130), stringEnum(200, 130), stringEnum(200, 130), stringEnum(200, 130), stringEnum(200, 130)),
			"params", "characters of property names and enum values in all: strict mode allows 120000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, form := range []string{provider.OpenAIStrict, provider.OpenAIStrictResponses} {
				_, err := provider.Render(form, tt.spec)
				if tt.wantMsg == "" {
					if err != nil {
						t.Errorf("%s: %v", form, err)
					}
					continue
				}
				var ue *provider.UnsupportedError
				if !errors.As(err, &ue) {
					t.Fatalf("%s: Render = %v, want an *UnsupportedError", form, err)
				}
				if len(ue.Problems) != 1 || ue.Problems[0].Path != tt.wantPath || !strings.Contains(ue.Problems[0].Message, tt.wantMsg) {
					t.Errorf("%s: problems %+v, want one at %s saying %q", form, ue.Problems, tt.wantPath, tt.wantMsg)
				}
			}
			// The limits are strict mode's: the plain form takes the tool.
			if _, err := provider.Render(provider.OpenAI, tt.spec); err != nil {
				t.Errorf("openai: %v", err)
			}
		})
	}
}

// The exact total: 5 names of 2 characters and 1,000 values, at the limit and
// one character over it.
func TestStrictFormCountsEveryCharacterOfNamesAndEnumValues(t *testing.T) {
	t.Parallel()
	// 5 names "p0".."p4" = 10 characters; 1,000 values of 119.99 on average.
	at := [][]any{stringEnum(200, 120), stringEnum(200, 120), stringEnum(200, 120), stringEnum(200, 120), stringEnum(200, 120)}
	at[4][0] = at[4][0].(string)[:110] // 10 fewer: 10 + 1000*120 - 10 = 120,000
	if _, err := provider.Render(provider.OpenAIStrict, enumTool(at...)); err != nil {
		t.Errorf("120,000 characters in all: %v", err)
	}
	at[4][0] = at[4][0].(string) + "y" // 120,001
	_, err := provider.Render(provider.OpenAIStrict, enumTool(at...))
	if err == nil || !strings.Contains(err.Error(), "120001 characters") {
		t.Errorf("120,001 characters in all: %v, want a refusal naming 120001", err)
	}
}
