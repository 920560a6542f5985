package toolreg_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
)

const resultManifest = `name: get_order
description: Look up an order.
returns:
  type: object
  properties:
    order_id:
      type: string
      pattern: "^ord_[0-9]+$"
    status:
      type: string
      enum: [open, shipped]
    total_cents:
      type: integer
      minimum: 0
      maximum: 9007199254740992
    weight_kg:
      type: number
      exclusiveMinimum: 0
      multipleOf: 0.5
    lines:
      type: array
      uniqueItems: true
      items:
        type: object
        properties:
          sku: {type: string, minLength: 3}
          qty: {type: integer, minimum: 1}
    shipped_at:
      type: string
      format: date-time
      required: false
    labels:
      type: object
      required: false
      additionalProperties: {type: boolean}
`

func resultTool(t *testing.T, manifest string) *toolreg.Tool {
	t.Helper()
	specs, err := loader.LoadFS(fstest.MapFS{"t.yaml": {Data: []byte(manifest)}}, "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return toolreg.NewTool(specs[0])
}

type line struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

type order struct {
	OrderID    string          `json:"order_id"`
	Status     string          `json:"status"`
	TotalCents json.Number     `json:"total_cents"`
	WeightKg   float64         `json:"weight_kg"`
	Lines      []line          `json:"lines"`
	ShippedAt  *time.Time      `json:"shipped_at,omitempty"`
	Labels     map[string]bool `json:"labels,omitempty"`
}

func goodOrder() order {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	return order{OrderID: "ord_1", Status: "open", TotalCents: "9007199254740992", WeightKg: 1.5,
		Lines: []line{{"abc", 1}, {"abd", 2}}, ShippedAt: &at, Labels: map[string]bool{"gift": true}}
}

// TestCheckResultAcceptsWhatReturnsAllows: the same result as a struct, a
// pointer to it, and the decoded JSON of it passes.
func TestCheckResultAcceptsWhatReturnsAllows(t *testing.T) {
	t.Parallel()
	tool := resultTool(t, resultManifest)
	o := goodOrder()
	raw, _ := json.Marshal(o)
	var decoded any
	_ = json.Unmarshal(raw, &decoded)
	noOptional := o
	noOptional.ShippedAt, noOptional.Labels = nil, nil
	for name, v := range map[string]any{"struct": o, "pointer": &o, "decoded JSON": decoded, "without the optional": noOptional} {
		if err := tool.CheckResult(v); err != nil {
			t.Errorf("%s: CheckResult: %v", name, err)
		}
	}
}

// TestCheckResultNamesEveryFailingPath: each way a result breaks returns is
// one problem at its JSON Pointer, exactly (2^53+1 is above a maximum of
// 2^53, which float64 cannot tell apart).
func TestCheckResultNamesEveryFailingPath(t *testing.T) {
	t.Parallel()
	tool := resultTool(t, resultManifest)
	o := goodOrder()
	o.OrderID = "order-1"
	o.Status = "lost"
	o.TotalCents = "9007199254740993"
	o.WeightKg = 1.25
	o.Lines = []line{{"ab", 0}, {"ab", 0}}
	err := tool.CheckResult(o)
	var re *toolreg.ToolResultError
	if !errors.As(err, &re) || !errors.Is(err, toolreg.ErrTool) {
		t.Fatalf("CheckResult = %v, want a *toolreg.ToolResultError wrapping ErrTool", err)
	}
	want := []toolreg.ResultProblem{
		{Path: "/order_id", Want: `a string matching "^ord_[0-9]+$"`, Got: `"order-1"`},
		{Path: "/status", Want: `one of ["open","shipped"]`, Got: `"lost"`},
		{Path: "/total_cents", Want: "at most 9007199254740992", Got: "9007199254740993"},
		{Path: "/weight_kg", Want: "a multiple of 0.5", Got: "1.25"},
		{Path: "/lines", Want: "unique items (item 1 repeats item 0)", Got: `{"qty":0,"sku":"ab"}`},
		{Path: "/lines/0/sku", Want: "at least 3 characters", Got: `"ab"`},
		{Path: "/lines/0/qty", Want: "at least 1", Got: "0"},
		{Path: "/lines/1/sku", Want: "at least 3 characters", Got: `"ab"`},
		{Path: "/lines/1/qty", Want: "at least 1", Got: "0"},
	}
	if diff := cmp.Diff(want, re.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if re.Tool != "get_order" {
		t.Errorf("Tool = %q", re.Tool)
	}
}

// TestCheckResultRefusesWhatEncodesWrong: null where a value is required, a
// missing member, an undeclared one, a wrong type, a bad format through
// MarshalJSON, a non-finite number.
func TestCheckResultRefusesWhatEncodesWrong(t *testing.T) {
	t.Parallel()
	tool := resultTool(t, resultManifest)
	cases := map[string]struct {
		v    any
		want []toolreg.ResultProblem
	}{
		"nil result":  {nil, []toolreg.ResultProblem{{Path: "", Want: "object", Got: "null"}}},
		"nil pointer": {(*order)(nil), []toolreg.ResultProblem{{Path: "", Want: "object", Got: "null"}}},
		"a string":    {"done", []toolreg.ResultProblem{{Path: "", Want: "object", Got: `string "done"`}}},
		"nil slice": {func() order { o := goodOrder(); o.Lines = nil; return o }(),
			[]toolreg.ResultProblem{{Path: "/lines", Want: "array of object", Got: "null"}}},
		"map missing and extra": {map[string]any{"order_id": "ord_2", "status": "open", "total_cents": 1, "weight_kg": 2, "lines": []any{}, "secret": "x", "labels": map[string]any{"a": "yes"}},
			[]toolreg.ResultProblem{
				{Path: "/labels/a", Want: "boolean", Got: `string "yes"`},
				{Path: "/secret", Want: "no such member: returns does not declare it", Got: "a value"},
			}},
		"map without required": {map[string]any{"order_id": "ord_2", "status": "open", "total_cents": 1, "weight_kg": 2},
			[]toolreg.ResultProblem{{Path: "/lines", Want: "array of object", Got: "missing"}}},
		"integer as a fraction": {func() order { o := goodOrder(); o.TotalCents = "2.5"; return o }(),
			[]toolreg.ResultProblem{{Path: "/total_cents", Want: "integer", Got: "2.5"}}},
		"NaN": {func() order { o := goodOrder(); o.WeightKg = math.NaN(); return o }(),
			[]toolreg.ResultProblem{{Path: "/weight_kg", Want: "a finite number", Got: "NaN"}}},
	}
	for name, c := range cases {
		err := tool.CheckResult(c.v)
		var re *toolreg.ToolResultError
		if !errors.As(err, &re) {
			t.Errorf("%s: CheckResult = %v, want a *toolreg.ToolResultError", name, err)
			continue
		}
		if diff := cmp.Diff(c.want, re.Problems); diff != "" {
			t.Errorf("%s: problems (-want +got):\n%s", name, diff)
		}
	}
}

type badTime struct{}

func (badTime) MarshalJSON() ([]byte, error) { return []byte(`"yesterday"`), nil }

// TestCheckResultChecksWhatAMarshalerWrites: a value that encodes itself is
// checked by its JSON.
func TestCheckResultChecksWhatAMarshalerWrites(t *testing.T) {
	t.Parallel()
	tool := resultTool(t, "name: when\ndescription: When.\nreturns:\n  type: object\n  properties:\n    at: {type: string, format: date-time}\n")
	type when struct {
		At any `json:"at"`
	}
	if err := tool.CheckResult(when{At: time.Now()}); err != nil {
		t.Errorf("time.Time: %v", err)
	}
	err := tool.CheckResult(when{At: badTime{}})
	var re *toolreg.ToolResultError
	if !errors.As(err, &re) || len(re.Problems) != 1 || re.Problems[0].Path != "/at" || re.Problems[0].Want != "a string of format date-time" {
		t.Errorf("CheckResult(badTime) = %v, want /at refused for its format", err)
	}
}

// TestCheckResultWithoutReturnsAcceptsAnything: a tool whose manifest
// declares no returns keeps today's behaviour.
func TestCheckResultWithoutReturnsAcceptsAnything(t *testing.T) {
	t.Parallel()
	tool := resultTool(t, "name: free\ndescription: Free.\n")
	if err := tool.CheckResult(make(chan int)); err != nil {
		t.Errorf("CheckResult: %v", err)
	}
	if tool.OutputSchema() != nil {
		t.Errorf("OutputSchema = %s, want nil", tool.OutputSchema())
	}
}

// flat is a struct of plain fields, which CheckResult reads from memory
// before it reaches for reflection; every field kind has a bound to break.
type flat struct {
	A int8    `json:"a"`
	B int16   `json:"b"`
	C int32   `json:"c"`
	D int     `json:"d"`
	E float32 `json:"e"`
	F float64 `json:"f"`
	S string  `json:"s"`
	T bool    `json:"t"`
}

const flatManifest = `name: flat
description: Flat.
returns:
  type: object
  properties:
    a: {type: integer, minimum: 1}
    b: {type: integer, maximum: 10}
    c: {type: integer, exclusiveMinimum: 0}
    d: {type: integer, exclusiveMaximum: 100}
    e: {type: number, minimum: 0.5}
    f: {type: number, maximum: 2.5}
    s: {type: string, maxLength: 3, enum: [abc, ab, é]}
    t: {type: boolean}
`

// TestCheckResultReadsAFlatStructAsReflectionWould: each field of a struct
// read straight from memory is held to its bounds exactly as the reflection
// path holds it, by value and through a pointer.
func TestCheckResultReadsAFlatStructAsReflectionWould(t *testing.T) {
	t.Parallel()
	tool := resultTool(t, flatManifest)
	good := flat{A: 1, B: 10, C: 1, D: 99, E: 0.5, F: 2.5, S: "é", T: true}
	if err := tool.CheckResult(good); err != nil {
		t.Fatalf("CheckResult(good) = %v", err)
	}
	if err := tool.CheckResult(&good); err != nil {
		t.Fatalf("CheckResult(&good) = %v", err)
	}
	for path, breakIt := range map[string]func(*flat){
		"/a": func(f *flat) { f.A = 0 },
		"/b": func(f *flat) { f.B = 11 },
		"/c": func(f *flat) { f.C = 0 },
		"/d": func(f *flat) { f.D = 100 },
		"/e": func(f *flat) { f.E = 0.25 },
		"/f": func(f *flat) { f.F = 2.75 },
		"/s": func(f *flat) { f.S = "abcd" },
	} {
		bad := good
		breakIt(&bad)
		for _, v := range []any{bad, &bad} {
			err := tool.CheckResult(v)
			var re *toolreg.ToolResultError
			if !errors.As(err, &re) || len(re.Problems) == 0 || re.Problems[0].Path != path {
				t.Errorf("%s broken (%T): CheckResult = %v, want a problem at %s", path, v, err, path)
			}
		}
	}
}

// TestAFloat32IsCheckedAsItIsEncoded: encoding/json writes float32(0.1) as
// 0.1, which a maximum of 0.1 allows, though float64(float32(0.1)) is above
// it; CheckResult judges what the consumer reads.
func TestAFloat32IsCheckedAsItIsEncoded(t *testing.T) {
	t.Parallel()
	tool := resultTool(t, "name: w\ndescription: W.\nreturns:\n  type: object\n  properties:\n    w: {type: number, maximum: 0.1}\n    n: {type: string}\n")
	type w struct {
		W float32 `json:"w"`
		N string  `json:"n"`
	}
	for _, v := range []any{w{W: 0.1, N: "x"}, &w{W: 0.1, N: "x"}, map[string]any{"w": float32(0.1), "n": "x"}} {
		if err := tool.CheckResult(v); err != nil {
			t.Errorf("CheckResult(%#v) = %v, want nil: it encodes as 0.1", v, err)
		}
	}
	if err := tool.CheckResult(w{W: 0.11, N: "x"}); err == nil {
		t.Error("CheckResult accepted 0.11 above a maximum of 0.1")
	}
}
