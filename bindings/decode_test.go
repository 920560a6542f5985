package bindings

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
)

func iptr(i int) *int { return &i }

// searchArgs is the benchmark's shape: a string, an integer with a default, a
// boolean and an array of strings.
type searchArgs struct {
	Query string   `json:"query"`
	Limit int      `json:"limit"`
	Exact bool     `json:"exact"`
	Tags  []string `json:"tags"`
}

func searchSpec() *toolreg.Spec {
	return &toolreg.Spec{
		Name: "search", Description: "Search the catalogue.",
		Params: []*toolreg.Param{
			{Name: "query", Schema: toolreg.Schema{Type: toolreg.TypeString, MinLength: iptr(1), MaxLength: iptr(40)}},
			{Name: "limit", Schema: toolreg.Schema{Type: toolreg.TypeInteger, HasDefault: true, Default: json.Number("10"), Minimum: json.Number("1"), Maximum: json.Number("100")}},
			{Name: "exact", Schema: toolreg.Schema{Type: toolreg.TypeBoolean, HasDefault: true, Default: false}},
			{Name: "tags", Schema: toolreg.Schema{Type: toolreg.TypeArray, Items: &toolreg.Schema{Type: toolreg.TypeString}, MaxItems: iptr(4), UniqueItems: true, HasDefault: true, Default: []any{}}},
		},
	}
}

// wideArgs covers every field shape the plan handles, and some it leaves to
// the reference path (format, float enums).
type wideArgs struct {
	Small  int8      `json:"small"`
	Port   uint16    `json:"port"`
	Ratio  float64   `json:"ratio"`
	Note   *string   `json:"note"`
	Page   *int      `json:"page"`
	Code   string    `json:"code"`
	Mode   string    `json:"mode"`
	Ids    []int64   `json:"ids"`
	Level  int       `json:"level"`
	Step   int       `json:"step"`
	Email  string    `json:"email"`
	Ws     []float64 `json:"ws"`
	On     *bool     `json:"on"`
	Weight float64   `json:"weight"`
}

func wideSpec(strict bool) *toolreg.Spec {
	str := func(s toolreg.Schema) toolreg.Schema { s.Type = toolreg.TypeString; return s }
	return &toolreg.Spec{
		Name: "wide", Description: "Every shape.", Strict: strict,
		Params: []*toolreg.Param{
			{Name: "small", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Minimum: json.Number("-100"), ExclusiveMaximum: json.Number("100.5")}},
			{Name: "port", Schema: toolreg.Schema{Type: toolreg.TypeInteger, HasDefault: true, Default: json.Number("8080"), Minimum: json.Number("1")}},
			{Name: "ratio", Schema: toolreg.Schema{Type: toolreg.TypeNumber, ExclusiveMinimum: json.Number("0"), Maximum: json.Number("1")}, Optional: true},
			{Name: "note", Schema: toolreg.Schema{Type: toolreg.TypeString}, Optional: true},
			{Name: "page", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Minimum: json.Number("1")}, Optional: true},
			{Name: "code", Schema: str(toolreg.Schema{Pattern: "^[A-Z]{2}[0-9]*$", HasDefault: true, Default: "AB"})},
			{Name: "mode", Schema: str(toolreg.Schema{Enum: []any{"fast", "slow", "ünï"}, HasDefault: true, Default: "fast"})},
			{Name: "ids", Schema: toolreg.Schema{Type: toolreg.TypeArray, Items: &toolreg.Schema{Type: toolreg.TypeInteger, Minimum: json.Number("0")}, MinItems: iptr(1)}, Optional: true},
			{Name: "level", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Enum: []any{json.Number("1"), json.Number("2.0"), json.Number("3")}, HasDefault: true, Default: json.Number("1")}},
			{Name: "step", Schema: toolreg.Schema{Type: toolreg.TypeInteger, MultipleOf: json.Number("5"), HasDefault: true, Default: json.Number("0")}},
			{Name: "email", Schema: str(toolreg.Schema{Format: "email", HasDefault: true, Default: "a@b.co"})},
			{Name: "ws", Schema: toolreg.Schema{Type: toolreg.TypeArray, Items: &toolreg.Schema{Type: toolreg.TypeNumber}, UniqueItems: true}, Optional: true},
			{Name: "on", Schema: toolreg.Schema{Type: toolreg.TypeBoolean}, Optional: true},
			{Name: "weight", Schema: toolreg.Schema{Type: toolreg.TypeNumber, HasDefault: true, Default: json.Number("0.5"), Minimum: json.Number("0.1")}},
		},
	}
}

// nestedArgs has nested objects, maps, slices of structs and slices of
// slices.
type nestedArgs struct {
	Opts struct {
		Depth int  `json:"depth"`
		Deep  bool `json:"deep"`
	} `json:"opts"`
	Meta   map[string]int      `json:"meta"`
	Items  []nestedItem        `json:"items"`
	Filter *nestedFilter       `json:"filter"`
	Groups map[string][]string `json:"groups"`
	Matrix [][]int             `json:"matrix"`
}

type nestedItem struct {
	Name string `json:"name"`
	Qty  uint8  `json:"qty"`
}

type nestedFilter struct {
	Min  float64  `json:"min"`
	Tags []string `json:"tags"`
}

func nestedSpec() *toolreg.Spec {
	obj := func(props ...*toolreg.Param) toolreg.Schema {
		return toolreg.Schema{Type: toolreg.TypeObject, Properties: props}
	}
	arr := func(items toolreg.Schema) toolreg.Schema {
		return toolreg.Schema{Type: toolreg.TypeArray, Items: &items}
	}
	withDefault := func(s toolreg.Schema, def any) toolreg.Schema { s.HasDefault, s.Default = true, def; return s }
	opts := obj(
		&toolreg.Param{Name: "depth", Schema: toolreg.Schema{Type: toolreg.TypeInteger, HasDefault: true, Default: json.Number("2")}},
		&toolreg.Param{Name: "deep", Schema: toolreg.Schema{Type: toolreg.TypeBoolean}},
	)
	items := arr(obj(
		&toolreg.Param{Name: "name", Schema: toolreg.Schema{Type: toolreg.TypeString, MinLength: iptr(1)}},
		&toolreg.Param{Name: "qty", Schema: toolreg.Schema{Type: toolreg.TypeInteger, HasDefault: true, Default: json.Number("1"), Maximum: json.Number("10")}},
	))
	items.MinItems = iptr(1)
	tags := arr(toolreg.Schema{Type: toolreg.TypeString})
	tags.UniqueItems = true
	filter := obj(
		&toolreg.Param{Name: "min", Schema: toolreg.Schema{Type: toolreg.TypeNumber, HasDefault: true, Default: json.Number("0")}},
		&toolreg.Param{Name: "tags", Schema: tags, Optional: true},
	)
	matrix := arr(arr(toolreg.Schema{Type: toolreg.TypeInteger}))
	matrix.UniqueItems = true
	return &toolreg.Spec{
		Name: "nested", Description: "Nested.",
		Params: []*toolreg.Param{
			{Name: "opts", Schema: withDefault(opts, map[string]any{"deep": true})},
			{Name: "meta", Schema: toolreg.Schema{Type: toolreg.TypeObject, AdditionalProperties: &toolreg.Schema{Type: toolreg.TypeInteger, Minimum: json.Number("0")}}, Optional: true},
			{Name: "items", Schema: items, Optional: true},
			{Name: "filter", Schema: filter, Optional: true},
			{Name: "groups", Schema: toolreg.Schema{Type: toolreg.TypeObject, AdditionalProperties: &tags}, Optional: true},
			{Name: "matrix", Schema: matrix, Optional: true},
		},
	}
}

// float32Args has a field the plan leaves to the reference path.
type float32Args struct {
	Ratio float32 `json:"ratio"`
}

func mustDecoder[A any](t testing.TB, spec *toolreg.Spec) *argDecoder[A] {
	t.Helper()
	d, err := compileDecoder[A](spec)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestPlanCoversTheCommonShapes(t *testing.T) {
	t.Parallel()
	if mustDecoder[searchArgs](t, searchSpec()).plan == nil {
		t.Error("no plan for the benchmark's shape")
	}
	if mustDecoder[wideArgs](t, wideSpec(false)).plan == nil {
		t.Error("no plan for flat scalars, pointers and slices")
	}
	if mustDecoder[nestedArgs](t, nestedSpec()).plan == nil {
		t.Error("no plan for nested objects, maps and slices of structs")
	}
	ratio := &toolreg.Spec{Name: "ratio", Description: "Ratio.", Params: []*toolreg.Param{{Name: "ratio", Schema: toolreg.Schema{Type: toolreg.TypeNumber}}}}
	if mustDecoder[float32Args](t, ratio).plan != nil {
		t.Error("a plan for a float32 field, which rounds twice on the reference path")
	}
}

// TestFastPathDecodesValidCalls checks that the plan takes the calls it is for
// and decodes them as the reference path does.
func TestFastPathDecodesValidCalls(t *testing.T) {
	t.Parallel()
	search := bothPaths(mustDecoder[searchArgs](t, searchSpec()))
	wide := bothPaths(mustDecoder[wideArgs](t, wideSpec(false)))
	nested := bothPaths(mustDecoder[nestedArgs](t, nestedSpec()))
	tests := []struct {
		name string
		args string
		dec  func(json.RawMessage) (fast any, ok bool, ref any, err error)
	}{
		{"nested: defaults only, the object's default gaining its own", `{}`, nested},
		{"nested: every shape", `{"opts":{"deep":"no"},"meta":{"a":1,"b":"2"},"items":[{"name":"x"},{"name":"y","qty":"3"}],"filter":{"tags":["a","b"]},"groups":{"g":["x"],"h":[]},"matrix":null}`, nested},
		{"nested: nulls inside nested objects", `{"opts":{"deep":true,"depth":null},"filter":{"min":null,"tags":null}}`, nested},
		{"the benchmark call", `{"query":"golang","limit":20,"exact":true,"tags":["a","b"]}`, search},
		{"a call relying on defaults", `{"query":"x"}`, search},
		{"a call with nulls for defaulted params", `{"query":"x","limit":null,"tags":null}`, search},
		{"an empty tag list", ` { "query" : "x" , "tags" : [ ] } `, search},
		{"lax: an integer string and a Pydantic boolean string", `{"query":"x","limit":" +7 ","exact":"ON"}`, search},
		{"lax: 5.0 for an integer and 0 for a boolean", `{"query":"x","limit":5.0,"exact":0}`, search},
		{"escapes and non-ASCII in strings", `{"query":"caf\u00e9 \"q\"\n","tags":["ü","\ud83d\ude00"]}`, search},
		{"wide: defaults only", `{"small":-100}`, wide},
		{"wide: every field", `{"small":100,"port":1,"ratio":0.25,"note":"n","page":3,"code":"XY12","mode":"ünï","ids":[0,7],"level":2,"step":15,"ws":[0.5,1.5],"on":false,"weight":2}`, wide},
		{"wide: nulls for optional pointers", `{"small":0,"note":null,"page":null,"on":null,"ratio":null}`, wide},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fast, ok, ref, err := tt.dec(json.RawMessage(tt.args))
			if err != nil {
				t.Fatalf("reference path refused %s: %v", tt.args, err)
			}
			if !ok {
				t.Fatalf("fast path did not take %s", tt.args)
			}
			if diff := cmp.Diff(ref, fast); diff != "" {
				t.Errorf("fast path differs from reference (-ref +fast):\n%s", diff)
			}
		})
	}
}

// bothPaths runs d's fast and reference paths on one call.
func bothPaths[A any](d *argDecoder[A]) func(json.RawMessage) (any, bool, any, error) {
	return func(raw json.RawMessage) (any, bool, any, error) {
		fast, ok := d.fast(raw)
		ref, err := d.reference(raw)
		return fast, ok, ref, err
	}
}

// TestDecoderFallsBackForWhatThePlanLeaves checks that calls the plan is not
// sure of (exponents, 1.0 for a boolean, escaped keys, invalid calls) go the
// reference way, with its results and errors.
func TestDecoderFallsBackForWhatThePlanLeaves(t *testing.T) {
	t.Parallel()
	search := mustDecoder[searchArgs](t, searchSpec())
	tests := []struct {
		name    string
		args    string
		want    searchArgs
		problem []toolreg.ArgProblem
	}{
		{"an integer with an exponent is coerced", `{"query":"x","limit":1e1}`, searchArgs{Query: "x", Limit: 10, Tags: []string{}}, nil},
		{"1.0 for a boolean is coerced", `{"query":"x","exact":1.0}`, searchArgs{Query: "x", Limit: 10, Exact: true, Tags: []string{}}, nil},
		{"an escaped key is read", `{"qu\u0065ry":"x"}`, searchArgs{Query: "x", Limit: 10, Tags: []string{}}, nil},
		{"a duplicate tag is refused", `{"query":"x","tags":["a","a"]}`, searchArgs{}, []toolreg.ArgProblem{{Path: "/tags", Want: "unique items", Got: "items 0 and 1 equal"}}},
		{"a limit out of range and a missing query are both reported", `{"limit":0}`, searchArgs{}, []toolreg.ArgProblem{
			{Path: "/limit", Want: "at least 1", Got: "0"},
			{Path: "/query", Want: "string (required)", Got: "nothing"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, ok := search.fast(json.RawMessage(tt.args)); ok {
				t.Fatalf("fast path took %s, which it leaves to the reference path", tt.args)
			}
			got, err := search.decode(json.RawMessage(tt.args))
			if tt.problem == nil {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("decode (-want +got):\n%s", diff)
				}
				return
			}
			var ae *toolreg.ToolArgumentError
			if !errors.As(err, &ae) {
				t.Fatalf("decode = %v, want *ToolArgumentError", err)
			}
			if diff := cmp.Diff(tt.problem, ae.Problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecoderReportsValuesTheGoTypeCannotHold(t *testing.T) {
	t.Parallel()
	wide := mustDecoder[wideArgs](t, wideSpec(false))
	_, err := wide.decode(json.RawMessage(`{"small":1,"port":70000}`))
	var ae *toolreg.ToolArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("decode = %v, want *ToolArgumentError", err)
	}
	want := []toolreg.ArgProblem{{Path: "/port", Want: "a value that fits the tool's Go type uint16", Got: "number 70000"}}
	if diff := cmp.Diff(want, ae.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

var fuzzSeeds = []string{
	``, `null`, `{}`, `[]`, `"x"`, `{`, `{"query":"x"}x`,
	`{"query":"golang","limit":20,"exact":true,"tags":["a","b"]}`,
	`{"query":"x","limit":"20","exact":"yes","tags":["a"]}`,
	`{"query":"x","limit":20.0,"exact":1,"tags":[]}`,
	`{"query":"x","limit":1e1}`, `{"query":"x","limit":-0}`, `{"query":"x","limit":01}`,
	`{"query":"x","limit":null,"exact":null,"tags":null}`,
	`{"query":null}`, `{"query":""}`, `{"query":"x","query":"y"}`, `{"qu\u0065ry":"x"}`,
	`{"query":"x","tags":["a","a"]}`, `{"query":"x","tags":[null]}`, `{"query":"x","tags":"a"}`,
	`{"query":"\u00e9\ud800","tags":["\u0000"]}`, "{\"query\":\"\xff\"}", "{\"query\":\"a\tb\"}",
	`{"small":100,"port":1,"ratio":0.25,"note":"n","page":3,"code":"XY12","mode":"ünï","ids":[0,7],"level":2,"step":15,"ws":[0.5,1.5],"on":false,"weight":2}`,
	`{"small":101}`, `{"small":100.5}`, `{"small":-101}`, `{"small":"7"}`, `{"small":1,"port":-1}`, `{"small":1,"port":65536}`,
	`{"small":1,"ratio":1}`, `{"small":1,"ratio":1.0000000000000000001}`, `{"small":1,"ratio":0}`, `{"small":1,"ratio":1e-400}`,
	`{"small":1,"weight":0.1}`, `{"small":1,"weight":0.1000000000000000000001}`, `{"small":1,"weight":1e400}`,
	`{"small":1,"level":2}`, `{"small":1,"level":4}`, `{"small":1,"step":7}`, `{"small":1,"email":"nope"}`,
	`{"small":1,"ids":[]}`, `{"small":1,"ids":[1,-1]}`, `{"small":1,"ws":[0.1,0.10000000000000000001]}`,
	`{"small":1,"note":null,"page":null,"on":null}`, `{"small":1,"on":"off"}`, `{"small":1,"code":"ab"}`,
	`{"small":"7","port":"80","ratio":"0.5","on":"yes","weight":true,"ids":["1",2.0],"ws":["1.5",true],"page":"2"}`,
	`{"small":" -100.000 "}`, `{"small":1,"on":1}`, `{"small":1,"on":-0}`, `{"small":1,"on":1.0}`, `{"small":true}`,
	`{"small":100.0}`, `{"small":1.50}`, `{"small":-0.0}`, `{"small":1,"ratio":"1e-3"}`, `{"small":1,"ratio":".5"}`, `{"small":1,"ratio":"nan"}`,
	`{"opts":{},"meta":{"a":"1"}}`, `{"opts":{"depth":null}}`, `{"opts":null}`, `{"opts":{"deep":true,"deep":false}}`,
	`{"opts":{"deep":"no"},"meta":{"a":1,"b":"2"},"items":[{"name":"x"},{"name":"y","qty":"3"}],"filter":{"tags":["a","b"]},"groups":{"g":["x"],"h":[]},"matrix":[[1],[2,3]]}`,
	`{"meta":{"a":1,"a":2}}`, `{"meta":{"a":null}}`, `{"items":[]}`, `{"items":[{"qty":1}]}`, `{"items":[{"name":"x","qty":11}]}`,
	`{"filter":{"tags":["a","a"]}}`, `{"filter":null}`, `{"filter":{}}`, `{"groups":{"g":["x","x"]}}`, `{"matrix":[[1],[1]]}`, `{"matrix":[[1],[1.0]]}`,
}

// FuzzDecodeAgreesWithReference is the differential test of the plan: for any
// input, when the fast path decodes it, the reference path (argcheck's coercion
// and santhosh-tekuri/jsonschema validation, canonical JSON, encoding/json)
// accepts it too and decodes the same value. And the decoder never panics.
func FuzzDecodeAgreesWithReference(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	search := mustDecoder[searchArgs](f, searchSpec())
	wide := mustDecoder[wideArgs](f, wideSpec(false))
	wideStrict := mustDecoder[wideArgs](f, wideSpec(true))
	nested := mustDecoder[nestedArgs](f, nestedSpec())
	f.Fuzz(func(t *testing.T, raw []byte) {
		differential(t, search, raw)
		differential(t, wide, raw)
		differential(t, wideStrict, raw)
		differential(t, nested, raw)
	})
}

func differential[A any](t *testing.T, d *argDecoder[A], raw []byte) {
	ref, refErr := d.reference(raw)
	fast, ok := d.fast(raw)
	if ok {
		if refErr != nil {
			t.Fatalf("%s: fast path accepted %q, which the reference refuses: %v", d.tool, raw, refErr)
		}
		if diff := cmp.Diff(ref, fast); diff != "" {
			t.Fatalf("%s: fast path decoded %q differently (-ref +fast):\n%s", d.tool, raw, diff)
		}
	}
	got, err := d.decode(raw)
	if (err == nil) != (refErr == nil) || err != nil && err.Error() != refErr.Error() {
		t.Fatalf("%s: decode(%q) error %v, reference %v", d.tool, raw, err, refErr)
	}
	if err == nil && !cmp.Equal(ref, got) {
		t.Fatalf("%s: decode(%q) differs from the reference: %s", d.tool, raw, cmp.Diff(ref, got))
	}
	if err != nil {
		var ae *toolreg.ToolArgumentError
		if !errors.As(err, &ae) || len(ae.Problems) == 0 {
			t.Fatalf("%s: decode(%q) error %v is not a *ToolArgumentError with problems", d.tool, raw, err)
		}
	}
}

func TestNewDecoderRefusesASchemaThatDoesNotCompile(t *testing.T) {
	t.Parallel()
	spec := &toolreg.Spec{
		Name: "bad", Description: "Bad pattern.", Pos: toolreg.Pos{File: "bad.yaml", Line: 3},
		Params: []*toolreg.Param{{Name: "q", Schema: toolreg.Schema{Type: toolreg.TypeString, Pattern: "(unclosed"}}},
	}
	_, err := newDecoder[struct {
		Q string `json:"q"`
	}](spec)
	var de *toolreg.ToolDefinitionError
	if !errors.As(err, &de) || len(de.Problems) != 1 {
		t.Fatalf("newDecoder = %v, want a *ToolDefinitionError with one problem", err)
	}
	if p := de.Problems[0]; p.Pos != spec.Pos || p.Tool != "bad" {
		t.Errorf("problem %v does not point at the manifest's tool", p)
	}
}

func TestDecoderIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	d := mustDecoder[nestedArgs](t, nestedSpec())
	calls := []string{
		`{"opts":{"deep":"no"},"meta":{"a":1},"items":[{"name":"x"}],"filter":{"tags":["a"]},"groups":{"g":["x"]}}`,
		`{"items":[]}`, // invalid: the reference path
		`{}`,
	}
	type result struct {
		A   nestedArgs
		Err string
	}
	decode := func(c string) result {
		a, err := d.decode(json.RawMessage(c))
		r := result{A: a}
		if err != nil {
			r.Err = err.Error()
		}
		return r
	}
	want := make([]result, len(calls))
	for i, c := range calls {
		want[i] = decode(c)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 50; n++ {
				i := (g + n) % len(calls)
				if diff := cmp.Diff(want[i], decode(calls[i])); diff != "" {
					t.Errorf("call %d decoded differently concurrently (-alone +concurrently):\n%s", i, diff)
					return
				}
			}
		}()
	}
	wg.Wait()
}
