package argcheck

import (
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
