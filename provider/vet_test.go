package provider_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/provider"
)

func TestVetReportsWhatEachProviderRefusesOrDegrades(t *testing.T) {
	t.Parallel()
	good := func(name string) *toolreg.Spec {
		return &toolreg.Spec{Name: name, Description: "Does a thing.", Pos: toolreg.Pos{File: "m.yaml", Line: 1},
			Params: []*toolreg.Param{{Name: "id", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "An id."}}}}
	}
	many := make([]*toolreg.Spec, 129)
	for i := range many {
		many[i] = good(fmt.Sprintf("t%d", i))
	}
	withParam := func(p *toolreg.Param) *toolreg.Spec {
		s := good("tool")
		s.Params = append(s.Params, p)
		return s
	}
	longDesc := good("tool")
	longDesc.Description = strings.Repeat("x", 1025)
	digitName := good("2fa_check")
	destructiveReader := good("tool")
	destructiveReader.Annotations = &toolreg.Annotations{DestructiveHint: ptr(true)}
	minLen := 2

	tests := []struct {
		name  string
		form  string
		specs []*toolreg.Spec
		want  []string // "severity path message-part", in order; only warnings and errors
	}{
		{"a clean tool has nothing to report", provider.OpenAIStrict, []*toolreg.Spec{good("tool")}, nil},
		{"openai refuses more than 128 tools", provider.OpenAI, many,
			[]string{"error  129 tools: OpenAI takes at most 128"}},
		{"anthropic takes more than 128 tools", provider.Anthropic, many, nil},
		// OpenAI documents no limit on a function's description (the API
		// reference and openai-go's FunctionDefinitionParam give one for the
		// name, 64, and none for the description): a warning, not an error.
		{"openai warns of a description over 1024 characters", provider.OpenAIResponses, []*toolreg.Spec{longDesc},
			[]string{"warning description description is 1025 characters"}},
		{"a description of 1024 characters draws no warning", provider.OpenAI, []*toolreg.Spec{func() *toolreg.Spec {
			s := good("tool")
			s.Description = strings.Repeat("é", 1024)
			return s
		}()}, nil},
		{"gemini refuses a name that starts with a digit", provider.Gemini, []*toolreg.Spec{digitName},
			[]string{`error name gemini refuses the name "2fa_check"`}},
		{"openai takes a name that starts with a digit", provider.OpenAI, []*toolreg.Spec{digitName}, nil},
		{"a param without a description is a warning", provider.Anthropic,
			[]*toolreg.Spec{withParam(&toolreg.Param{Name: "n", Schema: toolreg.Schema{Type: toolreg.TypeInteger}})},
			[]string{"warning params.n param has no description"}},
		{"a nested property without a description is a warning", provider.MCP,
			[]*toolreg.Spec{withParam(&toolreg.Param{Name: "o", Schema: toolreg.Schema{Type: toolreg.TypeObject, Description: "O.",
				Properties: []*toolreg.Param{{Name: "x", Schema: toolreg.Schema{Type: toolreg.TypeString}}}}})},
			[]string{"warning params.o.properties.x param has no description"}},
		{"a keyword strict mode moves is a warning", provider.OpenAIStrict,
			[]*toolreg.Spec{withParam(&toolreg.Param{Name: "s", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "S.", MinLength: &minLen}})},
			[]string{"warning params.s minLength: 2 moved into the description"}},
		{"a tool strict mode cannot express is an error", provider.OpenAIStrict, []*toolreg.Spec{spec("set_labels")},
			[]string{"error params.labels.additionalProperties an object with additionalProperties"}},
		{"mcp warns of a read-only tool marked destructive", provider.MCP, []*toolreg.Spec{destructiveReader},
			[]string{"warning annotations.destructiveHint a read-only tool"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs, err := provider.Vet(tt.form, tt.specs)
			if err != nil {
				t.Fatal(err)
			}
			var got []provider.Finding
			for _, f := range fs {
				if f.Severity >= provider.Warning {
					got = append(got, f)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d findings, want %d:\n%v", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				sev, rest, _ := strings.Cut(w, " ")
				path, msg, _ := strings.Cut(rest, " ")
				f := got[i]
				if f.Severity.String() != sev || f.Path != path || !strings.Contains(f.Message, msg) || f.Form != tt.form {
					t.Errorf("finding %d = %v, want %s at %q saying %q", i, f, sev, path, msg)
				}
			}
			if w, ok := provider.Worst(fs); tt.want != nil && (!ok || w < provider.Warning) {
				t.Errorf("Worst = %v, %v", w, ok)
			}
		})
	}
}

func TestVetRefusesAnUnknownForm(t *testing.T) {
	t.Parallel()
	_, err := provider.Vet("bard", nil)
	var ue *provider.UnknownFormError
	if !errors.As(err, &ue) {
		t.Fatalf("Vet(bard) = %v, want an *UnknownFormError", err)
	}
}

func TestFindingStringNamesWhereWhatAndWhichForm(t *testing.T) {
	t.Parallel()
	f := provider.Finding{Form: "gemini", Severity: provider.Error, Pos: toolreg.Pos{File: "m.yaml", Line: 3, Col: 5},
		Tool: "t", Path: "params.x", Message: "bad"}
	if got, want := f.String(), "m.yaml:3:5: error: gemini: t: params.x: bad"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
