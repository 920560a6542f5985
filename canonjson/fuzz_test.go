package canonjson

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"
)

// reference is the format's definition for a Go value: a generic value (what
// encoding/json decodes into an any) written by appendValue; any other value
// as encoding/json's text, decoded into generic values and written so. Marshal must give
// its bytes, or fail where it fails.
func reference(v any) ([]byte, error) {
	switch v.(type) {
	case nil, bool, string, json.Number, float64, map[string]any, []any:
		return appendValue(nil, v)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return canonicalizeReference(raw)
}

var canonicalSeeds = []string{
	`{"b":1,"a":[true,false,null],"c":{"z":"x","y":1.5}}`,
	`{"amount":10.0,"tiny":1e-7,"big":1e21,"neg":-0.0,"exp":1E5,"int":12345678901234567890}`,
	`{"html":"<a href=\"x\">&amp;</a>","sep":"\u2028\u2029","ctl":"\u0000\u001f\b\f\n\r\t","uni":"remboursé ✓"}`,
	`{"emoji":"\ud83d\ude00","lone":"\ud800","esc":"\/\\\""}`,
	`{"dup":1,"dup":2}`,
	`{"é":1,"e":2,"E":3,"":4}`,
	`[{"b":{"d":[],"c":{}},"a":""},[],{}]`,
	`"just a string"`, `3.14159`, `-12`, `null`, `1e400`, `-0`, `01`, `1.e5`, `"\u00zz"`,
	`{"a" : [ 1 , 2 ] , "b":{ }}`,
	`{"nested":{"deeper":{"deepest":[1,{"y":2,"x":1}]}}}`,
}

// FuzzCanonicalize holds Canonicalize's fast path to its reference on any
// text: whatever rewrite accepts, the reference accepts and writes the same
// bytes; whatever rewrite leaves, Canonicalize still answers as the
// reference does.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := canonicalizeReference(data)
		if got, ok := rewrite(data); ok && (wantErr != nil || !bytes.Equal(got, want)) {
			t.Fatalf("rewrite(%q)\n got %s\nwant %s, %v", data, got, want, wantErr)
		}
		got, err := Canonicalize(data)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("Canonicalize(%q)\n got %s, %v\nwant %s, %v", data, got, err, want, wantErr)
		}
		if err == nil && !json.Valid(got) {
			t.Fatalf("Canonicalize(%q) = %s, which is not JSON", data, got)
		}
		// AppendCanonical writes the same bytes after what dst holds, and
		// leaves dst as it was on error, whatever its spare capacity.
		prefix := append(make([]byte, 0, 64), "prefix"...)
		app, appErr := AppendCanonical(prefix, data)
		if (appErr != nil) != (wantErr != nil) || !bytes.Equal(app, append([]byte("prefix"), want...)) {
			t.Fatalf("AppendCanonical(%q)\n got %s, %v\nwant prefix%s, %v", data, app, appErr, want, wantErr)
		}
		// Any value, wrapped in a struct, through Marshal.
		var v any
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if d.Decode(&v) != nil {
			return
		}
		wrapped := struct {
			Z any    `json:"z"`
			A string `json:"a"`
		}{v, "<&>"}
		for _, x := range []any{v, wrapped, []any{v}} {
			want, wantErr := reference(x)
			got, gotErr := Marshal(x)
			if (wantErr != nil) != (gotErr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("Marshal(%s)\n got %s, %v\nwant %s, %v", data, got, gotErr, want, wantErr)
			}
		}
	})
}

// encoderCase holds every kind of field encoding/json writes, so that
// FuzzMarshal reaches what a tool's result can hold.
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
	Str  int                `json:"str,string"`
	Zero time.Time          `json:"zero,omitzero"`
	P    *float64           `json:"p"`
	Any  any                `json:"any"`
	List []string           `json:"list"`
	Arr  [2]int             `json:"arr"`
	M    map[string]float64 `json:"m"`
	ByID map[int]string     `json:"by_id"`
	Raw  json.RawMessage    `json:"raw"`
	Byte []byte             `json:"byte"`
	When time.Time          `json:"when"`
	Next *encoderCase       `json:"next,omitempty"`
	Skip int                `json:"-"`
	//lint:ignore SA5008 the field named "-" is one of the cases
	Dash  int `json:"-,"`
	hide  int
	Plain string
	embedded
}

type embedded struct {
	Beta string `json:"beta"`
	S    string `json:"s"` // shadowed by encoderCase.S, by encoding/json's rules
}

// plainCase is what the cached encoder writes itself (encoderCase is what it
// leaves to encoding/json).
type plainCase struct {
	S     string             `json:"s"`
	Empty string             `json:"empty,omitempty"`
	B     bool               `json:"b,omitempty"`
	I     int64              `json:"i"`
	I8    int8               `json:"i8"`
	U     uint32             `json:"u,omitempty"`
	F     float64            `json:"f"`
	F32   float32            `json:"f32"`
	P     *float64           `json:"p"`
	Any   any                `json:"any"`
	List  []string           `json:"list"`
	Arr   [2]int             `json:"arr"`
	M     map[string]float64 `json:"m"`
	Next  *plainCase         `json:"next,omitempty"`
	Skip  int                `json:"-"`
	Été   string             `json:"été"`
	hide  int
	Plain string
}

// FuzzMarshal holds Marshal to the reference on structs of every kind,
// through both the cached encoder and encoding/json.
func FuzzMarshal(f *testing.F) {
	f.Add("remboursé", "<&>\u2028", int64(-7), 10.0, float32(0.1), uint32(3), true)
	f.Add("", "\x00\x1f\"\\", int64(0), 1e21, float32(1e20), uint32(0), false)
	f.Add("\xff", "é", int64(1<<62), 1e-7, float32(math.Copysign(0, -1)), uint32(1), false)
	f.Add("a", "b", int64(2), math.Inf(1), float32(3.5), uint32(2), true)
	f.Fuzz(func(t *testing.T, s, k string, i int64, fl float64, f32 float32, u uint32, b bool) {
		inner := &encoderCase{S: k, F: -fl, M: map[string]float64{}}
		raw := json.RawMessage(strconv.Quote(k))
		if !json.Valid(raw) || !utf8.ValidString(k) {
			raw = nil
		}
		v := encoderCase{
			S: s, Empty: k, Odd: s, Bad: k, B: b, I: i, I8: int8(i), U: u, F: fl, F32: f32, Str: int(i), P: &fl,
			Any:  map[string]any{k: []any{s, fl, i, nil, b}, "n": json.Number("12")},
			List: []string{s, k}, Arr: [2]int{int(i), -1},
			M: map[string]float64{s: fl, k: float64(f32)}, ByID: map[int]string{int(i): s, 2: k},
			Raw: raw, Byte: []byte(s), When: time.UnixMilli(i % (1 << 40)).UTC(),
			Next: inner, Skip: 1, Dash: 2, hide: 3, Plain: s, embedded: embedded{Beta: k, S: s},
		}
		if b {
			v.Any, v.List, v.M = inner, nil, nil
		}
		pinner := &plainCase{S: k, F: -fl, M: map[string]float64{}}
		p := plainCase{
			S: s, Empty: k, B: b, I: i, I8: int8(i), U: u, F: fl, F32: f32, P: &fl,
			Any:  map[string]any{k: []any{s, fl, i, nil, b}, "n": json.Number("12")},
			List: []string{s, k}, Arr: [2]int{int(i), -1},
			M:    map[string]float64{s: fl, k: float64(f32)},
			Next: pinner, Skip: 1, Été: k, hide: 3, Plain: s,
		}
		if b {
			p.Any, p.List, p.M = pinner, nil, nil
		}
		for _, x := range []any{v, &v, []encoderCase{v, {}}, map[string]*encoderCase{s: &v, k: nil}, fl, f32, s,
			p, &p, []plainCase{p, {}}, map[string]*plainCase{s: &p, k: nil}} {
			want, wantErr := reference(x)
			got, gotErr := Marshal(x)
			if (wantErr != nil) != (gotErr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("Marshal(%#v)\n got %s, %v\nwant %s, %v", x, got, gotErr, want, wantErr)
			}
		}
	})
}

// referenceString is AppendString as first written: one byte or rune at a
// time, each case spelled out. The run-copying version must give its bytes
// for every input.
func referenceString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"u\o`, "tab\tnl\ncr\r\b\f\x00\x1f\x7f", "remboursé", "日本語 \u2028", "bad\xffutf8\xc3", "\xed\xa0\x80", "😀x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		prefix := []byte("p:")
		got := AppendString(bytes.Clone(prefix), s)
		want := referenceString(bytes.Clone(prefix), s)
		if !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %q, want %q", s, got, want)
		}
	})
}

// FuzzAppendFloat holds AppendFloat to Python's repr rule, restated: the
// shortest round-trip digits, fixed notation for exponents in [-4, 16).
func FuzzAppendFloat(f *testing.F) {
	for _, x := range []float64{0, math.Copysign(0, -1), 1, 10, 0.1, 1e-5, 1e-4, 1e15, 1e16, 123456789.125, -2.5e-300, math.MaxFloat64} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		got := string(AppendFloat(nil, x))
		if math.IsNaN(x) || math.IsInf(x, 0) {
			if got != "" {
				t.Fatalf("AppendFloat(%v) = %q, want nothing", x, got)
			}
			return
		}
		back, err := strconv.ParseFloat(got, 64)
		if err != nil || back != x && !(x == 0 && back == 0) {
			t.Fatalf("AppendFloat(%v) = %q, which reads back as %v, %v", x, got, back, err)
		}
		e := strconv.FormatFloat(x, 'e', -1, 64)
		exp, _ := strconv.Atoi(e[bytes.IndexByte([]byte(e), 'e')+1:])
		if fixed := exp >= -4 && exp < 16; fixed != !bytes.ContainsAny([]byte(got), "e") {
			t.Fatalf("AppendFloat(%v) = %q: exponent %d wants fixed notation %v", x, got, exp, fixed)
		}
		if !bytes.ContainsAny([]byte(got), ".e") {
			t.Fatalf("AppendFloat(%v) = %q: a float keeps a decimal point or an exponent", x, got)
		}
	})
}

// BenchmarkMarshal compares Marshal with the reference on a typical tool
// result, a small struct.
func BenchmarkMarshal(b *testing.B) {
	type receipt struct {
		RefundID string `json:"refund_id"`
		Amount   int    `json:"amount"`
		Note     string `json:"note"`
	}
	v := receipt{RefundID: "rf-o-1", Amount: 30, Note: "remboursé"}
	for _, f := range []struct {
		name string
		fn   func(any) ([]byte, error)
	}{{"impl=reference", reference}, {"impl=Marshal", Marshal}} {
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

func TestEncoderWritesPlainStructsItself(t *testing.T) {
	t.Parallel()
	type plain struct {
		A  string            `json:"a"`
		B  int               `json:"b,omitempty"`
		C  []float64         `json:"c"`
		M  map[string]*plain `json:"m"`
		Go bool
	}
	for _, v := range []any{plain{}, map[string][]plain{}, &plain{M: map[string]*plain{"x": {}}}, plainCase{}} {
		if _, ok := encodeDirect(v); !ok {
			t.Errorf("encodeDirect(%T) left it to json.Marshal", v)
		}
	}
	for _, v := range []any{encoderCase{}, json.Number("1"), []byte("x"), map[int]string{}, struct{ F float64 }{math.NaN()}, "\xff", time.Time{}} {
		if _, ok := encodeDirect(v); ok {
			t.Errorf("encodeDirect(%T) wrote it, but only encoding/json's own rules do", v)
		}
	}
	type node struct {
		Next *node `json:"next"`
	}
	cycle := &node{}
	cycle.Next = cycle
	if _, err := Marshal(cycle); err == nil {
		t.Errorf("Marshal encoded a cycle")
	}
}
