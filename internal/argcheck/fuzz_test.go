package argcheck

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzCheck feeds arbitrary bytes to Check, lax and strict: it never panics,
// a refusal always lists at least one problem with a want and a got, and what
// it accepts is a fixed point (checking the normalized arguments again gives
// them back unchanged), so normalizing twice cannot change a call.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `{"query":"a"}`, `{"query":"a","limit":"20","exact":"yes"}`,
		`{"query":"a","limit":10.0,"counts":["1",2.0],"opts":{"deep":"off"},"meta":{"x":"7"}}`,
		`{"query":"a","limit":null,"opts":{"deep":true,"depth":null}}`, `{"query":"a","tags":["a","a"]}`,
		`{"query":"ABC","ratio":"-1e3","mode":"x","email":"a@b"}`, `{"query":"a","limit":1e99999}`, `{"query":`,
		`{"query":"a","ratio":1e-400}`, `{"query":"a","exact":1.0}`, `{"query":"a","limit":true}`,
		`{"query":"a","query":"b"}`, `{"query":"a","opts":{"deep":true,"deep":false}}`, `{"query":"a","\u0071uery":"b"}`,
		`{"query":"a","counts":[{"a":1,"a":2}]}`,
	} {
		f.Add([]byte(s))
	}
	lax := mustCompile(f, testSchema, false)
	strict := mustCompile(f, testSchema, true)
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, c := range []*Checker{lax, strict} {
			m, err := c.Check(raw)
			if err != nil {
				var ae *Error
				if !errors.As(err, &ae) || len(ae.Problems) == 0 {
					t.Fatalf("Check(%q) = %v, want an *Error with problems", raw, err)
				}
				for _, p := range ae.Problems {
					if p.Want == "" || p.Got == "" {
						t.Fatalf("Check(%q): problem %+v lacks a want or a got", raw, p)
					}
				}
				continue
			}
			again, err := json.Marshal(m)
			if err != nil {
				t.Fatalf("Check(%q) accepted arguments that do not encode: %v", raw, err)
			}
			m2, err := c.Check(again)
			if err != nil {
				t.Fatalf("Check refused its own normalized output %s: %v", again, err)
			}
			if diff := cmp.Diff(m, m2); diff != "" {
				t.Fatalf("normalizing %s again changed it (-once +twice):\n%s", again, diff)
			}
		}
	})
}
