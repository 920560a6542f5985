package effector

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/beam-agents/toolreg"
)

var canonicalSeeds = []string{
	`{"b":1,"a":[true,false,null],"c":{"z":"x","y":1.5}}`,
	`{"amount":10.0,"tiny":1e-7,"big":1e21,"neg":-0.0,"exp":1E5,"int":12345678901234567890}`,
	`{"html":"<a href=\"x\">&amp;</a>","sep":"\u2028\u2029","ctl":"\u0000\u001f\b\f\n\r\t","uni":"remboursé ✓"}`,
	`{"emoji":"\ud83d\ude00","lone":"\ud800","esc":"\/\\\""}`,
	`{"dup":1,"dup":2}`,
	`{"é":1,"e":2,"E":3,"":4}`,
	`[{"b":{"d":[],"c":{}},"a":""},[],{}]`,
	`"just a string"`, `3.14159`, `-12`, `null`,
	`{"a" : [ 1 , 2 ] , "b":{ }}`,
	`{"nested":{"deeper":{"deepest":[1,{"y":2,"x":1}]}}}`,
}

// FuzzCanonicalResult holds canonicalResult to toolreg.CanonicalJSON's bytes,
// for any JSON a tool's result could hold, through both of its paths.
func FuzzCanonicalResult(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return
		}
		// Wrapped in a struct, the value takes canonicalResult's own path.
		wrapped := struct {
			Z any    `json:"z"`
			A string `json:"a"`
		}{v, "<&>"}
		for _, x := range []any{v, wrapped, []any{v}} {
			want, wantErr := toolreg.CanonicalJSON(x)
			got, gotErr := canonicalResult(x)
			if (wantErr != nil) != (gotErr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("canonicalResult(%s)\n got %s, %v\nwant %s, %v", data, got, gotErr, want, wantErr)
			}
		}
		// On raw text, whatever the fast path accepts must be what
		// Canonicalize writes.
		if json.Valid(data) {
			c := canonicalizer{in: data}
			if got, ok := c.value(nil); ok && c.skipSpace() == len(data) {
				want, err := toolreg.Canonicalize(data)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("fast canonical form of %s\n got %s\nwant %s, %v", data, got, want, err)
				}
			}
		}
	})
}

type receipt struct {
	Zeta    string            `json:"zeta"`
	Amount  float64           `json:"amount"`
	Count   int               `json:"count,omitempty"`
	When    time.Time         `json:"when"`
	Tags    map[string]int    `json:"tags"`
	ByID    map[int]string    `json:"by_id"`
	Raw     json.RawMessage   `json:"raw"`
	Inner   *receipt          `json:"inner,omitempty"`
	Extra   map[string]any    `json:"extra"`
	Bytes   []byte            `json:"bytes"`
	Nothing *struct{ X int }  `json:"nothing"`
	Labels  map[string]string `json:"-"`
	embedded
}

type embedded struct {
	Beta string `json:"beta"`
}

func TestCanonicalResultMatchesCanonicalJSON(t *testing.T) {
	t.Parallel()
	r := receipt{
		Zeta: "z<>&\u2028", Amount: 10, When: time.UnixMilli(1700000000000).UTC(),
		Tags: map[string]int{"b": 2, "a": 1}, ByID: map[int]string{10: "ten", 2: "two"},
		Raw: json.RawMessage(`{"y":1,"x":[2.50,1e2]}`), Inner: &receipt{Amount: 0.1, Count: 3},
		Extra: map[string]any{"f": 1.5, "n": json.Number("7"), "s": "é"}, Bytes: []byte{0, 1, 2},
		embedded: embedded{Beta: "b"},
	}
	tests := []struct {
		name string
		v    any
	}{
		{"a struct with every kind of field", r},
		{"a pointer to it", &r},
		{"a slice of structs", []receipt{r, {}}},
		{"a typed map", map[string]receipt{"k": r}},
		{"an integer", 42},
		{"a float", 2.5},
		{"a string", "x"},
		{"nil", nil},
		{"a map of any", map[string]any{"b": 1.0, "a": []any{1, "x"}}},
		{"a struct whose field names extend others with characters below the quote", struct {
			A  int `json:"a"`
			B  int `json:"a!"`
			C  int `json:"a b"`
			AB int `json:"ab"`
		}{1, 2, 3, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want, err := toolreg.CanonicalJSON(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := canonicalResult(tt.v)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("canonicalResult\n got %s, %v\nwant %s", got, err, want)
			}
		})
	}
	t.Run("NaN is refused as CanonicalJSON refuses it", func(t *testing.T) {
		t.Parallel()
		if _, err := canonicalResult(struct{ F float64 }{math.NaN()}); err == nil {
			t.Errorf("canonicalResult accepted NaN")
		}
	})
}

// BenchmarkCanonicalResult compares canonicalResult with
// toolreg.CanonicalJSON, whose bytes it must give, on a typical tool result.
func BenchmarkCanonicalResult(b *testing.B) {
	type receipt struct {
		RefundID string `json:"refund_id"`
		Amount   int    `json:"amount"`
		Note     string `json:"note"`
	}
	v := receipt{RefundID: "rf-o-1", Amount: 30, Note: "remboursé"}
	for _, f := range []struct {
		name string
		fn   func(any) ([]byte, error)
	}{{"impl=toolreg.CanonicalJSON", toolreg.CanonicalJSON}, {"impl=canonicalResult", canonicalResult}} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.fn(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// encoderCase holds every kind the cached encoder writes itself, and some it
// leaves to json.Marshal, so that FuzzCanonicalEncoder reaches both.
type encoderCase struct {
	S     string `json:"s"`
	Empty string `json:"empty,omitempty"`
	Odd   string `json:"odd name!,omitempty"`
	//lint:ignore SA5008 a malformed tag, as encoding/json reads it, is one of the cases
	Bad  string             `json:"bad\"tag"`
	B    bool               `json:"b,omitempty"`
	I    int64              `json:"i"`
	I8   int8               `json:"i8"`
	U    uint32             `json:"u,omitempty"`
	F    float64            `json:"f"`
	F32  float32            `json:"f32"`
	P    *float64           `json:"p"`
	Any  any                `json:"any"`
	List []string           `json:"list"`
	Arr  [2]int             `json:"arr"`
	M    map[string]float64 `json:"m"`
	Next *encoderCase       `json:"next,omitempty"`
	Skip int                `json:"-"`
	//lint:ignore SA5008 the field named "-" is one of the cases
	Dash  int `json:"-,"`
	hide  int
	Plain string
}

// FuzzCanonicalEncoder holds the cached encoder (through canonicalResult) to
// toolreg.CanonicalJSON's bytes on structs of every kind it writes.
func FuzzCanonicalEncoder(f *testing.F) {
	f.Add("remboursé", "<&>\u2028", int64(-7), 10.0, float32(0.1), uint32(3), true)
	f.Add("", "\x00\x1f\"\\", int64(0), 1e21, float32(1e20), uint32(0), false)
	f.Add("\xff", "é", int64(1<<62), 1e-7, float32(math.Copysign(0, -1)), uint32(1), false)
	f.Add("a", "b", int64(2), math.Inf(1), float32(3.5), uint32(2), true)
	f.Fuzz(func(t *testing.T, s, k string, i int64, fl float64, f32 float32, u uint32, b bool) {
		inner := &encoderCase{S: k, F: -fl, M: map[string]float64{}}
		v := encoderCase{
			S: s, Empty: k, Odd: s, Bad: k, B: b, I: i, I8: int8(i), U: u, F: fl, F32: f32, P: &fl,
			Any:  map[string]any{k: []any{s, fl, i, nil, b}, "n": json.Number("12")},
			List: []string{s, k}, Arr: [2]int{int(i), -1},
			M:    map[string]float64{s: fl, k: float64(f32)},
			Next: inner, Skip: 1, Dash: 2, hide: 3, Plain: s,
		}
		if b {
			v.Any, v.List, v.M = inner, nil, nil
		}
		for _, x := range []any{v, &v, []encoderCase{v, {}}, map[string]*encoderCase{s: &v, k: nil}, fl, f32, s} {
			want, wantErr := toolreg.CanonicalJSON(x)
			got, gotErr := canonicalResult(x)
			if (wantErr != nil) != (gotErr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("canonicalResult(%#v)\n got %s, %v\nwant %s, %v", x, got, gotErr, want, wantErr)
			}
		}
	})
}

func TestCanonicalEncoderWritesStructsItself(t *testing.T) {
	t.Parallel()
	for _, v := range []any{encoderCase{}, map[string][]encoderCase{}, &encoderCase{Next: &encoderCase{}}} {
		if _, ok := encodeDirect(v); !ok {
			t.Errorf("encodeDirect(%T) left it to json.Marshal", v)
		}
	}
	for _, v := range []any{receipt{}, json.Number("1"), []byte("x"), map[int]string{}, struct{ F float64 }{math.NaN()}, "\xff"} {
		if _, ok := encodeDirect(v); ok {
			t.Errorf("encodeDirect(%T) wrote it, but only encoding/json's own rules do", v)
		}
	}
	cycle := &encoderCase{}
	cycle.Next = cycle
	if _, err := canonicalResult(cycle); err == nil {
		t.Errorf("canonicalResult encoded a cycle")
	}
}
