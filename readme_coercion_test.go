package toolreg_test

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg"
)

// TestTheREADMECoercionTableIsWhatCheckArgsDoes holds the README's "Argument
// coercion" table (issue 3 asks for it) to the code: every example in its
// accepted column is accepted, as a value of the param's JSON type, and every
// example in its refused column is refused, for a required param of that type.
// With strict: true, the accepted strings are refused.
func TestTheREADMECoercionTableIsWhatCheckArgsDoes(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := coercionRows(t, string(readme))
	if len(rows) != 5 {
		t.Fatalf("found %d rows in the README's coercion table, want 5 (integer, number, boolean, string, array/object)", len(rows))
	}
	tool := func(typ toolreg.Type, strict bool) *toolreg.Tool {
		s := toolreg.Schema{Type: typ}
		if typ == toolreg.TypeArray {
			s.Items = &toolreg.Schema{Type: toolreg.TypeInteger}
		}
		if typ == toolreg.TypeObject {
			s.AdditionalProperties = &toolreg.Schema{Type: toolreg.TypeInteger}
		}
		return toolreg.NewTool(&toolreg.Spec{Name: "t", Description: "A tool.", Strict: strict, Params: []*toolreg.Param{{Name: "v", Schema: s}}})
	}
	examples := 0
	for _, r := range rows {
		for _, typ := range r.types {
			lax, strict := tool(typ, false), tool(typ, true)
			for _, v := range r.accepted {
				examples++
				out, err := lax.CheckArgs(json.RawMessage(`{"v":` + v + `}`))
				if err != nil {
					t.Errorf("%s: the README says %s is accepted; CheckArgs: %v", typ, v, err)
					continue
				}
				if got := normalized(t, out); !isJSONType(got, typ) {
					t.Errorf("%s: %s was accepted as %s, not as a JSON %s", typ, v, out, typ)
				}
				if strings.HasPrefix(v, `"`) {
					if _, err := strict.CheckArgs(json.RawMessage(`{"v":` + v + `}`)); !isArgErr(err) {
						t.Errorf("%s, strict: %s was not refused (%v); strict turns coercion off", typ, v, err)
					}
				}
			}
			for _, v := range r.refused {
				examples++
				if _, err := lax.CheckArgs(json.RawMessage(`{"v":` + v + `}`)); !isArgErr(err) {
					t.Errorf("%s: the README says %s is refused; CheckArgs error = %v", typ, v, err)
				}
			}
			// The Pydantic column names what Pydantic accepts and toolreg
			// refuses: each such example is refused here, and listed as refused.
			for _, v := range r.pydantic {
				examples++
				if _, err := lax.CheckArgs(json.RawMessage(`{"v":` + v + `}`)); !isArgErr(err) {
					t.Errorf("%s: the README says Pydantic differs on %s, but toolreg accepts it too", typ, v)
				}
				if !slices.Contains(r.refused, v) {
					t.Errorf("%s: the README's Pydantic column names %s, which the refused column does not list", typ, v)
				}
			}
		}
	}
	if examples < 40 {
		t.Errorf("checked %d examples from the table; its parse lost some", examples)
	}
}

type coercionRow struct {
	types             []toolreg.Type
	accepted, refused []string // JSON texts
	pydantic          []string // JSON texts Pydantic accepts where toolreg refuses them
	same              bool     // the Pydantic column says "the same"
}

var backticked = regexp.MustCompile("`([^`]*)`")

// coercionRows reads the table under "## Argument coercion". A backticked
// text that is not JSON is a list of boolean strings ("0 off f ..."): each
// word is an example, in lower and upper case.
func coercionRows(t *testing.T, readme string) []coercionRow {
	_, section, ok := strings.Cut(readme, "## Argument coercion")
	if !ok {
		t.Fatal(`README.md has no "## Argument coercion" section`)
	}
	var rows []coercionRow
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		cols := strings.Split(line, "|")
		if len(cols) != 6 {
			t.Fatalf("table row %q has %d columns, want 4", line, len(cols)-2)
		}
		var r coercionRow
		for _, m := range backticked.FindAllStringSubmatch(cols[1], -1) {
			r.types = append(r.types, toolreg.Type(m[1]))
		}
		examples := func(col string) []string {
			var out []string
			for _, m := range backticked.FindAllStringSubmatch(col, -1) {
				if json.Valid([]byte(m[1])) {
					out = append(out, m[1])
					continue
				}
				for _, w := range strings.Fields(m[1]) {
					out = append(out, `"`+w+`"`, `"`+strings.ToUpper(w)+`"`)
				}
			}
			return out
		}
		r.accepted, r.refused = examples(cols[2]), examples(cols[3])
		for _, m := range backticked.FindAllStringSubmatch(cols[4], -1) {
			if json.Valid([]byte(m[1])) {
				r.pydantic = append(r.pydantic, m[1])
			}
		}
		r.same = strings.TrimSpace(cols[4]) == "the same"
		if r.same == (len(r.pydantic) > 0) {
			t.Errorf("row %q: the Pydantic column must say \"the same\" or name what Pydantic accepts", line)
		}
		rows = append(rows, r)
	}
	return rows
}

func normalized(t *testing.T, out []byte) any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("CheckArgs returned %s: %v", out, err)
	}
	return m["v"]
}

func isJSONType(v any, typ toolreg.Type) bool {
	switch typ {
	case toolreg.TypeInteger:
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case toolreg.TypeNumber:
		_, ok := v.(float64)
		return ok
	case toolreg.TypeBoolean:
		_, ok := v.(bool)
		return ok
	case toolreg.TypeString:
		_, ok := v.(string)
		return ok
	}
	return false
}

func isArgErr(err error) bool {
	var ae *toolreg.ToolArgumentError
	return errors.As(err, &ae)
}

// beyondTypeRows returns the first column of each row of the README's table
// of differences beyond a value's type, backticks removed, with its toolreg
// and Pydantic columns.
func beyondTypeRows(t *testing.T, readme string) map[string][2]string {
	t.Helper()
	_, section, ok := strings.Cut(readme, "Beyond a value's own type:")
	if !ok {
		t.Fatal(`README.md's coercion section has no "Beyond a value's own type:" table`)
	}
	rows := map[string][2]string{}
	started := false
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			if started {
				break
			}
			continue
		}
		started = true
		cols := strings.Split(line, "|")
		if len(cols) != 5 {
			t.Fatalf("row %q has %d columns, want 3", line, len(cols)-2)
		}
		name := strings.TrimSpace(strings.ReplaceAll(cols[1], "`", ""))
		if name == "case" || strings.HasPrefix(name, "---") {
			continue
		}
		rows[name] = [2]string{strings.TrimSpace(cols[2]), strings.TrimSpace(cols[3])}
	}
	return rows
}

// Each row of the README's table of differences beyond a value's type has a
// test here, and each test a row.
func TestTheREADMEDifferencesFromPydanticAreWhatCheckArgsDoes(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	one := func(p toolreg.Param, strict bool) *toolreg.Tool {
		p.Name = "v"
		return toolreg.NewTool(&toolreg.Spec{Name: "t", Description: "A tool.", Strict: strict, Params: []*toolreg.Param{&p}})
	}
	check := func(t *testing.T, tool *toolreg.Tool, args, want string) {
		t.Helper()
		out, err := tool.CheckArgs(json.RawMessage(args))
		switch {
		case want == "" && !isArgErr(err):
			t.Errorf("CheckArgs(%s) = %s, %v; want it refused", args, out, err)
		case want != "" && err != nil:
			t.Errorf("CheckArgs(%s): %v; want %s", args, err, want)
		case want != "" && string(out) != want:
			t.Errorf("CheckArgs(%s) = %s, want %s", args, out, want)
		}
	}
	tests := map[string]func(t *testing.T){
		"unknown keys": func(t *testing.T) {
			tool := one(toolreg.Param{Schema: toolreg.Schema{Type: toolreg.TypeInteger}}, false)
			_, err := tool.CheckArgs(json.RawMessage(`{"v":1,"colour":"red"}`))
			var ae *toolreg.ToolArgumentError
			if !errors.As(err, &ae) || len(ae.Problems) != 1 || ae.Problems[0].Path != "/colour" {
				t.Errorf("CheckArgs with an unknown key = %v, want one problem at /colour", err)
			}
		},
		"null for a param with a non-null default": func(t *testing.T) {
			tool := one(toolreg.Param{Schema: toolreg.Schema{Type: toolreg.TypeInteger, HasDefault: true, Default: json.Number("10")}}, false)
			check(t, tool, `{"v":null}`, `{"v":10}`)
		},
		"multipleOf": func(t *testing.T) {
			tool := one(toolreg.Param{Schema: toolreg.Schema{Type: toolreg.TypeNumber, MultipleOf: json.Number("0.1")}}, false)
			check(t, tool, `{"v":0.30000000000000004}`, "")
			check(t, tool, `{"v":0.3}`, `{"v":0.3}`)
		},
		"an integer enum member sent as a string": func(t *testing.T) {
			tool := one(toolreg.Param{Schema: toolreg.Schema{Type: toolreg.TypeInteger,
				Enum: []any{json.Number("1"), json.Number("2"), json.Number("3")}}}, false)
			check(t, tool, `{"v":"1"}`, `{"v":1}`)
			check(t, tool, `{"v":"4"}`, "")
		},
		"strict: true, a whole-number float for an integer": func(t *testing.T) {
			tool := one(toolreg.Param{Schema: toolreg.Schema{Type: toolreg.TypeInteger}}, true)
			check(t, tool, `{"v":10.0}`, `{"v":10}`)
			check(t, tool, `{"v":"10"}`, "")
		},
	}
	rows := beyondTypeRows(t, string(readme))
	for name, cols := range rows {
		test, ok := tests[name]
		if !ok {
			t.Errorf("the README's row %q has no test: add one here", name)
			continue
		}
		if cols[0] == "" || cols[1] == "" {
			t.Errorf("the README's row %q leaves a column empty", name)
		}
		t.Run(name, test)
	}
	for name := range tests {
		if _, ok := rows[name]; !ok {
			t.Errorf("a test for %q, which the README's table does not list", name)
		}
	}
}
