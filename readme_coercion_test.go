package toolreg_test

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
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
		}
	}
	if examples < 40 {
		t.Errorf("checked %d examples from the table; its parse lost some", examples)
	}
}

type coercionRow struct {
	types             []toolreg.Type
	accepted, refused []string // JSON texts
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
		if len(cols) != 5 {
			t.Fatalf("table row %q has %d columns, want 3", line, len(cols)-2)
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
