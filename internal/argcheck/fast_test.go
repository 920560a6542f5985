package argcheck

import (
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"
)

// TestFastPathsLeaveWhatTheyDoNotKnow checks that a keyword toolreg does not
// render keeps both fast paths off, so the validator alone decides.
func TestFastPathsLeaveWhatTheyDoNotKnow(t *testing.T) {
	t.Parallel()
	type args struct {
		N int `json:"n"`
	}
	for _, tt := range []struct {
		name, schema string
	}{
		{"const", `{"type":"object","properties":{"n":{"type":"integer","const":3}},"required":["n"],"additionalProperties":false}`},
		{"a list of types", `{"type":"object","properties":{"n":{"type":["integer","null"]}},"required":["n"],"additionalProperties":false}`},
		{"an open object", `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`},
		{"allOf at the root", `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false,"allOf":[{"required":["m"]}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustCompile(t, tt.schema, false)
			if p := c.Plan(reflect.TypeFor[args]()); p != nil {
				var a args
				if p.Decode([]byte(`{"n":4}`), unsafe.Pointer(&a)) {
					t.Errorf("Plan decoded a call its schema's %s may refuse", tt.name)
				}
			}
			if out, ok := c.Canonical([]byte(`{"n":4}`)); ok {
				t.Errorf("Canonical wrote %s for a call its schema's %s may refuse", out, tt.name)
			}
		})
	}
}

func TestPlanRefusesTypesItCannotMatchExactly(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, `{"type":"object","properties":{"x":{"type":"number"}},"required":["x"],"additionalProperties":false}`, false)
	type float32Field struct {
		X float32 `json:"x"`
	}
	type stringOption struct {
		X float64 `json:"x,string"`
	}
	type extraField struct {
		X float64 `json:"x"`
		Y int     `json:"y"`
	}
	type unmarshaler struct {
		X customFloat `json:"x"`
	}
	for name, typ := range map[string]reflect.Type{
		"float32 rounds twice on the reference path": reflect.TypeFor[float32Field](),
		"the ,string option changes decoding":        reflect.TypeFor[stringOption](),
		"a field that is no param":                   reflect.TypeFor[extraField](),
		"a custom unmarshaler":                       reflect.TypeFor[unmarshaler](),
		"not a struct":                               reflect.TypeFor[map[string]any](),
	} {
		if c.Plan(typ) != nil {
			t.Errorf("%s: got a plan", name)
		}
	}
}

type customFloat float64

func (f *customFloat) UnmarshalJSON([]byte) error { *f = 42; return nil }

type tag string

// TestThePlanStoresSlicesAndMapsOfEveryKindAsTheirOwnTypes decodes slices
// and maps, of plain and named element types, through the plan, and checks
// each against encoding/json's decoding. Run under -gcflags=all=-d=checkptr
// (.ci/run does), it also checks that every store the plan makes through
// unsafe.Pointer fits the memory it writes.
func TestThePlanStoresSlicesAndMapsOfEveryKindAsTheirOwnTypes(t *testing.T) {
	t.Parallel()
	type inner struct {
		N int `json:"n"`
	}
	type args struct {
		Strings []string         `json:"strings"`
		Tags    []tag            `json:"tags"`
		Nums    []int            `json:"nums"`
		Inners  []inner          `json:"inners"`
		Counts  map[string]int   `json:"counts"`
		Named   map[tag]string   `json:"named"`
		Ptr     *inner           `json:"ptr"`
		Nested  map[string][]tag `json:"nested"`
	}
	c := mustCompile(t, `{"type":"object","additionalProperties":false,"required":["strings","tags","nums","inners","counts","named","ptr","nested"],"properties":{
		"strings":{"type":"array","items":{"type":"string"}},
		"tags":{"type":"array","items":{"type":"string"}},
		"nums":{"type":"array","items":{"type":"integer"}},
		"inners":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["n"],"properties":{"n":{"type":"integer"}}}},
		"counts":{"type":"object","additionalProperties":{"type":"integer"}},
		"named":{"type":"object","additionalProperties":{"type":"string"}},
		"ptr":{"type":"object","additionalProperties":false,"required":["n"],"properties":{"n":{"type":"integer"}}},
		"nested":{"type":"object","additionalProperties":{"type":"array","items":{"type":"string"}}}}}`, false)
	p := c.Plan(reflect.TypeFor[args]())
	if p == nil {
		t.Fatal("no plan for slices and maps the fast path knows")
	}
	in := []byte(`{"strings":["a","b"],"tags":["x","y","z"],"nums":[1,2,3],"inners":[{"n":1},{"n":2}],"counts":{"a":1,"b":2},"named":{"k":"v"},"ptr":{"n":7},"nested":{"q":["r","s"]}}`)
	var got args
	if !p.Decode(in, unsafe.Pointer(&got)) {
		t.Fatal("Plan.Decode refused arguments it should take")
	}
	var want args
	if err := json.Unmarshal(in, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Plan.Decode = %+v, want %+v", got, want)
	}
	if reflect.TypeOf(got.Tags) != reflect.TypeFor[[]tag]() || reflect.TypeOf(got.Named) != reflect.TypeFor[map[tag]string]() {
		t.Fatalf("decoded into the wrong types: %T, %T", got.Tags, got.Named)
	}
}
