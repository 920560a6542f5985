package diag

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/internal/diag/sariftest"
	"github.com/google/go-cmp/cmp"
)

var testTool = Tool{
	Name:           "toolreg",
	Version:        "v1.2.3",
	InformationURI: "https://pkg.go.dev/github.com/beam-agents/toolreg",
	Rules: []Rule{
		{ID: "manifest", Description: "A manifest meets schema.cue."},
		{ID: "provider", Description: "A provider accepts the tool as declared."},
	},
}

// hostile holds what a runner, a URI or a JSON encoder must not take
// literally: the separators of workflow command properties, line breaks,
// percent signs, spaces and a '#'.
var hostile = []Diagnostic{
	{Severity: Error, Rule: "manifest", File: "manifests/refund.yaml", Line: 4, Col: 3, Title: "refund: params.amount", Message: "type: conflicting values \"numbr\" and \"number\""},
	{Severity: Warning, Rule: "provider", File: "dir, with: odd/100% #1.yaml", Line: 2, Title: "a,b: c", Message: "50% off\r\nsecond line: with, commas"},
	{Severity: Note, Rule: "provider", Message: "about the whole list, at no file"},
}

func TestGitHubCommandsEscapeAsTheRunnerRequires(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	if err := Write(&b, GitHub, testTool, hostile); err != nil {
		t.Fatal(err)
	}
	want := `::error file=manifests/refund.yaml,line=4,col=3,title=refund%3A params.amount::type: conflicting values "numbr" and "number"
::warning file=dir%2C with%3A odd/100%25 #1.yaml,line=2,title=a%2Cb%3A c::50%25 off%0D%0Asecond line: with, commas
::notice::about the whole list, at no file
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("workflow commands (-want +got):\n%s", diff)
	}
	// Each diagnostic is one command on one line, whatever its text holds.
	if n := strings.Count(b.String(), "\n"); n != len(hostile) {
		t.Errorf("%d lines for %d diagnostics", n, len(hostile))
	}
}

func TestEscapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, data, prop string }{
		{"plain", "plain", "plain"},
		{"%", "%25", "%25"},
		{"%0A", "%250A", "%250A"}, // an escape already in the text stays text
		{"a\rb\nc", "a%0Db%0Ac", "a%0Db%0Ac"},
		{"k:v,w", "k:v,w", "k%3Av%2Cw"},
		{"::error::", "::error::", "%3A%3Aerror%3A%3A"},
	} {
		if got := escapeData(tc.in); got != tc.data {
			t.Errorf("escapeData(%q) = %q, want %q", tc.in, got, tc.data)
		}
		if got := escapeProperty(tc.in); got != tc.prop {
			t.Errorf("escapeProperty(%q) = %q, want %q", tc.in, got, tc.prop)
		}
	}
}

func TestSARIFMeetsTheSchema(t *testing.T) {
	t.Parallel()
	for name, ds := range map[string][]Diagnostic{"hostile": hostile, "none": nil} {
		var b bytes.Buffer
		if err := Write(&b, SARIF, testTool, ds); err != nil {
			t.Fatal(err)
		}
		if err := sariftest.Validate(b.Bytes()); err != nil {
			t.Errorf("%s: the SARIF log does not meet the SARIF 2.1.0 schema: %v\n%s", name, err, b.Bytes())
		}
	}

	// The check can fail: a level SARIF does not define is refused.
	var b bytes.Buffer
	if err := Write(&b, SARIF, testTool, hostile[:1]); err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(b.Bytes(), []byte(`"level": "error"`), []byte(`"level": "fatal"`), 1)
	if bytes.Equal(bad, b.Bytes()) {
		t.Fatal("no level to break")
	}
	if err := sariftest.Validate(bad); err == nil {
		t.Error("the schema accepted a result of level \"fatal\"")
	}
}

func TestSARIFSaysWhatAndWhere(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := Write(&b, SARIF, testTool, hostile); err != nil {
		t.Fatal(err)
	}
	var log sarifLog
	if err := json.Unmarshal(b.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if len(log.Runs) != 1 || len(log.Runs[0].Results) != len(hostile) {
		t.Fatalf("want one run with %d results:\n%s", len(hostile), b.Bytes())
	}
	rs := log.Runs[0].Results
	got := []string{}
	for _, r := range rs {
		uri, line := "", 0
		if len(r.Locations) > 0 {
			uri = r.Locations[0].PhysicalLocation.ArtifactLocation.URI
			if reg := r.Locations[0].PhysicalLocation.Region; reg != nil {
				line = reg.StartLine
			}
		}
		got = append(got, strings.Join([]string{r.Level, r.RuleID, log.Runs[0].Tool.Driver.Rules[r.RuleIndex].ID, uri, string(rune('0' + line)), r.Message.Text}, " | "))
	}
	want := []string{
		`error | manifest | manifest | manifests/refund.yaml | 4 | refund: params.amount: type: conflicting values "numbr" and "number"`,
		"warning | provider | provider | ./dir%2C%20with:%20odd/100%25%20%231.yaml | 2 | a,b: c: 50% off\r\nsecond line: with, commas",
		"note | provider | provider |  | 0 | about the whole list, at no file",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

func TestFileURI(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"manifests/a.yaml":      "manifests/a.yaml",
		"a b/c#d?.yaml":         "a%20b/c%23d%3F.yaml",
		"origin:main/x.yaml":    "./origin:main/x.yaml",
		"/abs/path/x.yaml":      "file:///abs/path/x.yaml",
		"app/main.go":           "app/main.go",
		"caf\u00e9/\u00fc.yaml": "caf%C3%A9/%C3%BC.yaml",
	} {
		if got := fileURI(in); got != want {
			t.Errorf("fileURI(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJSONLinesOneObjectEach(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := Write(&b, JSONL, testTool, hostile); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != len(hostile) {
		t.Fatalf("%d lines for %d diagnostics:\n%s", len(lines), len(hostile), b.String())
	}
	for i, l := range lines {
		var got jsonLine
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, l)
		}
		d := hostile[i]
		want := jsonLine{d.Severity.String(), d.Rule, d.File, d.Line, d.Col, d.Title, d.Message}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("line %d (-want +got):\n%s", i+1, diff)
		}
	}
	if want := `{"severity":"note","rule":"provider","message":"about the whole list, at no file"}`; lines[2] != want {
		t.Errorf("a diagnostic with no place: %s, want %s", lines[2], want)
	}
}

func TestARuleTheToolDoesNotDeclareIsRefused(t *testing.T) {
	t.Parallel()
	for _, f := range Formats {
		var b bytes.Buffer
		err := Write(&b, f, testTool, []Diagnostic{{Rule: "nosuch", Message: "m"}})
		var ure *UnknownRuleError
		if !errors.As(err, &ure) || ure.Rule != "nosuch" {
			t.Errorf("%s: err = %v, want an *UnknownRuleError for nosuch", f, err)
		}
		if b.Len() > 0 {
			t.Errorf("%s: wrote %q before refusing", f, b.String())
		}
	}
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for _, f := range Formats {
		if got, ok := ParseFormat(string(f)); !ok || got != f {
			t.Errorf("ParseFormat(%q) = %q, %v", f, got, ok)
		}
	}
	for _, s := range []string{"", "text", "GitHub", "sarif2"} {
		if _, ok := ParseFormat(s); ok {
			t.Errorf("ParseFormat(%q) accepted it", s)
		}
	}
}
