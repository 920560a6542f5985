package loader_test

import (
	"cmp"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
)

// problemsOf returns every finding of a Load error as file:line:col: text
// lines: the problems of a *toolreg.ToolDefinitionError and each
// *toolreg.DuplicateToolError, in the order the error gives them.
func problemsOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		t.Fatal("Load accepted the manifests")
	}
	var out []string
	var walk func(err error)
	walk = func(err error) {
		if multi, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range multi.Unwrap() {
				walk(e)
			}
			return
		}
		var tde *toolreg.ToolDefinitionError
		var dup *toolreg.DuplicateToolError
		switch {
		case errors.As(err, &tde):
			for _, p := range tde.Problems {
				out = append(out, p.String())
			}
		case errors.As(err, &dup):
			out = append(out, dup.Second.String()+": duplicate "+dup.Name+" first at "+dup.First.String())
		default:
			t.Fatalf("unexpected error type %T: %v", err, err)
		}
	}
	walk(err)
	return out
}

// TestEveryProblemIsReportedInOneRun loads files that each hold problems of
// different kinds (CUE's own errors, the loader's rules, YAML syntax,
// duplicates across files) and wants every one of them in one run, each once,
// sorted by position.
func TestEveryProblemIsReportedInOneRun(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(corpus, "bad")
	tests := []struct {
		name string
		path string
		want []string // substrings, one per problem, in order
	}{
		{"a YAML file with problems in four documents", "many_problems.yaml", []string{
			"many_problems.yaml:3:1: many_problems: side_efect: field not allowed",
			"many_problems.yaml:6:5: many_problems: params.query.type: unknown type \"strng\"",
			"many_problems.yaml:9:5: many_problems: params.limit.default: default 0 does not satisfy its own param",
			"many_problems.yaml:11:3: many_problems: params.tags.items: missing items",
			"many_problems.yaml:15:5: many_problems: params.code.pattern: invalid pattern",
			"many_problems.yaml:17:1: second_doc: description: missing description",
			"many_problems.yaml:19:3: second_doc: params.id: missing type",
			"many_problems.yaml:24:1: invalid YAML: ",
			"many_problems.yaml:30:5: fourth_doc: params.n.default: got a string \"ten\", want a number",
		}},
		{"a CUE package and a YAML file beside it", "cue_many_problems", []string{
			"a.cue:5:2: first: side_efect: field not allowed",
			"a.cue:6:13: first: params.q.type: unknown type \"strng\"",
			"a.cue:9:8: second: description: missing description",
			"a.cue:18:4: third: params.limit.default: default 0 does not satisfy its own param",
			"a.cue:21:3: third: params.tags.items: missing items",
			"b.yaml:1:1: duplicate third first at cue_many_problems/a.cue:13:8",
			"b.yaml:6:5: third: params.code.pattern: ",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name+" shows every problem once, in order", func(t *testing.T) {
			t.Parallel()
			_, err := loader.LoadFS(os.DirFS(bad), tc.path)
			got := problemsOf(t, err)
			// Duplicates come as errors of their own, after the problems.
			probs := slices.DeleteFunc(slices.Clone(got), func(s string) bool { return strings.Contains(s, ": duplicate ") })
			sorted := slices.IsSortedFunc(probs, func(a, b string) int { return cmp.Compare(posKey(a), posKey(b)) })
			if !sorted {
				t.Errorf("problems are not sorted by file:line:col:\n%s", strings.Join(got, "\n"))
			}
			if len(got) != len(tc.want) {
				t.Errorf("got %d problems, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for _, w := range tc.want {
				n := 0
				for _, g := range got {
					if strings.Contains(g, w) {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%d problems say %q, want 1:\n%s", n, w, strings.Join(got, "\n"))
				}
			}
		})
	}
}

// posKey orders a finding by file, then line and column as numbers.
func posKey(s string) string {
	parts := strings.SplitN(s, ":", 4)
	if len(parts) < 3 {
		return s
	}
	pad := func(n string) string { return strings.Repeat("0", max(0, 8-len(n))) + n }
	return parts[0] + "\x00" + pad(parts[1]) + "\x00" + pad(parts[2])
}

// A param whose shape the schema already accepted is not checked again, but
// its name still is, and so is every param of a tool with many.
func TestEveryParamOfAWideToolIsChecked(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("name: wide\ndescription: d\nparams:\n")
	for i := range 300 {
		switch i {
		case 7:
			b.WriteString("  \"bad name\": {type: string}\n")
		case 150:
			b.WriteString("  p150: {type: strng}\n")
		case 299:
			b.WriteString("  p299: {type: string, maxLength: -1}\n")
		default:
			b.WriteString("  p" + strconv.Itoa(i) + ": {type: string}\n")
		}
	}
	_, err := loader.LoadFS(fstest.MapFS{"m.yaml": {Data: []byte(b.String())}}, "m.yaml")
	got := problemsOf(t, err)
	want := []string{
		`m.yaml:11:3: wide: params."bad name": field not allowed: invalid param name "bad name"`,
		`m.yaml:154:10: wide: params.p150.type: unknown type "strng"`,
		`m.yaml:303:24: wide: params.p299.maxLength: `,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d = %s, want %s...", i, got[i], w)
		}
	}
}
