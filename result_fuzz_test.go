package toolreg_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compiledResultSchema compiles a tool's ResultSchema with an independent
// JSON Schema validator, formats asserted as the argument checker asserts
// them.
func compiledResultSchema(t testing.TB, raw []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("r.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("r.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// agrees checks that CheckResult accepts v exactly when the JSON
// encoding/json writes for it validates against the result schema.
func agrees(t *testing.T, check func(any) error, schema *jsonschema.Schema, v any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		return // not a value a tool can return
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := schema.Validate(doc) == nil
	got := check(v) == nil
	if got != want {
		t.Errorf("CheckResult accepts %s: %v; the JSON Schema validator: %v (%v)", raw, got, want, check(v))
	}
}

// FuzzCheckResultAgreesWithJSONSchemaOnDecodedJSON: for any JSON a tool
// might return as a map, CheckResult and an independent validator of the
// result schema agree.
func FuzzCheckResultAgreesWithJSONSchemaOnDecodedJSON(f *testing.F) {
	for _, seed := range []string{
		`{"order_id":"ord_1","status":"open","total_cents":1,"weight_kg":1.5,"lines":[]}`,
		`{"order_id":"ord_1","status":"open","total_cents":9007199254740993,"weight_kg":0.5,"lines":[{"sku":"abc","qty":1}],"labels":{"x":true}}`,
		`{"order_id":"x","status":"lost","total_cents":-1,"weight_kg":0,"lines":[{"sku":"ab","qty":0},{"sku":"ab","qty":0}]}`,
		`{"order_id":"ord_2","status":"shipped","total_cents":2.0,"weight_kg":1e0,"lines":[],"shipped_at":"2026-12-03T10:00:00Z","extra":1}`,
		`{"order_id":"ord_2","status":"shipped","total_cents":2,"weight_kg":1,"lines":[],"shipped_at":"yesterday"}`,
		`[]`, `null`, `"s"`, `{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tool := resultTool(t, resultManifest)
		schema := compiledResultSchema(t, tool.OutputSchema())
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return
		}
		agrees(t, tool.CheckResult, schema, v)
	})
}

// FuzzCheckResultAgreesWithJSONSchemaOnAFlatStruct: the same for struct
// values, which CheckResult reads from memory when it can.
func FuzzCheckResultAgreesWithJSONSchemaOnAFlatStruct(f *testing.F) {
	f.Add(int8(1), int16(10), int32(1), 99, float32(0.5), 2.5, "é", true)
	f.Add(int8(0), int16(11), int32(0), 100, float32(0.25), 2.75, "abcd", false)
	f.Add(int8(-128), int16(-1), int32(math.MaxInt32), math.MinInt, float32(math.MaxFloat32), math.Inf(1), "ab", true)
	f.Add(int8(1), int16(10), int32(1), 99, float32(0.1), 0.3, "ab", true)
	f.Add(int8(1), int16(10), int32(1), 99, float32(0.3), 0.1+0.2, "ab", true)
	// The same fields against bounds no float64 holds exactly (0.1, 0.3):
	// a float is judged by the decimal encoding/json writes for it.
	decimal := strings.NewReplacer("minimum: 0.5", "minimum: 0.1", "maximum: 2.5", "maximum: 0.3").Replace(flatManifest)
	f.Fuzz(func(t *testing.T, a int8, b int16, c int32, d int, e float32, fl float64, s string, tr bool) {
		for _, m := range []string{flatManifest, decimal} {
			tool := resultTool(t, m)
			schema := compiledResultSchema(t, tool.OutputSchema())
			v := flat{A: a, B: b, C: c, D: d, E: e, F: fl, S: s, T: tr}
			agrees(t, tool.CheckResult, schema, v)
			agrees(t, tool.CheckResult, schema, &v)
		}
	})
}
