package argcheck

import (
	"reflect"
	"testing"
	"unsafe"
)

// BenchmarkCheck measures the reference path (parse, normalize, validate with
// santhosh-tekuri/jsonschema) against the plan on the same valid call, and the
// reference path on an invalid call, which only it explains.
func BenchmarkCheck(b *testing.B) {
	c := mustCompile(b, testSchema, false)
	valid := []byte(`{"query":"golang","limit":20,"exact":true,"tags":["go","lang"]}`)
	b.Run("reference-valid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Check(valid); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference-invalid", func(b *testing.B) {
		invalid := []byte(`{"query":"GOLANG","limit":0,"exact":"maybe","tags":["go","go"],"x":1}`)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Check(invalid); err == nil {
				b.Fatal("accepted")
			}
		}
	})
	b.Run("plan-valid", func(b *testing.B) {
		type args struct {
			Query  string   `json:"query"`
			Limit  int      `json:"limit"`
			Exact  *bool    `json:"exact"`
			Ratio  *float64 `json:"ratio"`
			Tags   []string `json:"tags"`
			Counts []int    `json:"counts"`
			Mode   *string  `json:"mode"`
			Opts   *struct {
				Depth int  `json:"depth"`
				Deep  bool `json:"deep"`
			} `json:"opts"`
			Meta  map[string]int `json:"meta"`
			Email *string        `json:"email"`
		}
		p := c.Plan(reflect.TypeFor[args]())
		if p == nil {
			b.Fatal("no plan")
		}
		b.ReportAllocs()
		for b.Loop() {
			var a args
			if !p.Decode(valid, unsafe.Pointer(&a)) {
				b.Fatal("plan refused a valid call")
			}
		}
	})
}
