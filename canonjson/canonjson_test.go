package canonjson_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/canonjson"
)

func TestCanonicalizeRefusesTextThatIsNotOneValue(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{"a":1} x`, `1 }`, `1 2`, `{"a":1}{}`, ``, `{"a":`, `01`, `1.`, `-`, `1e`, `"\x"`, `[1,]`, `{"a" 1}`, `tru`} {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			if got, err := canonjson.Canonicalize([]byte(in)); err == nil {
				t.Errorf("Canonicalize(%q) = %s, nil; want an error", in, got)
			}
		})
	}
}

func TestCanonicalizeKeepsOneValueWithSpaceAround(t *testing.T) {
	t.Parallel()
	got, err := canonjson.Canonicalize([]byte(" {\"b\": 1.50, \"a\": [true, null, \"é\"]}\n\t"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":[true,null,"é"],"b":1.5}`; string(got) != want {
		t.Errorf("Canonicalize = %s; want %s", got, want)
	}
}

func TestCanonicalizeSaysWhereTheExtraTextIs(t *testing.T) {
	t.Parallel()
	_, err := canonjson.Canonicalize([]byte("{\"a\":1} \n x"))
	if err == nil || !strings.Contains(err.Error(), "at byte 10:") || !strings.HasPrefix(err.Error(), "canonjson: ") {
		t.Errorf("error = %v; want one starting with canonjson: and naming byte 10, where the extra text starts", err)
	}
}

// Invalid UTF-8 becomes U+FFFD, the same bytes whether the string is the
// whole value or a member of a struct (encoded through encoding/json first).
func TestMarshalWritesInvalidUTF8AsTheReplacementCharacterEverywhere(t *testing.T) {
	t.Parallel()
	top, err := canonjson.Marshal("a\xffb")
	if err != nil {
		t.Fatal(err)
	}
	nested, err := canonjson.Marshal(struct {
		S string `json:"s"`
	}{"a\xffb"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "\"a\uFFFDb\""; string(top) != want {
		t.Errorf("top-level string = %s, want %s", top, want)
	}
	if want := "{\"s\":\"a\uFFFDb\"}"; string(nested) != want {
		t.Errorf("string in a struct = %s, want %s", nested, want)
	}
}

// The format, byte for byte, as beam-agents (Python's json.dumps with
// sort_keys, separators (",", ":"), ensure_ascii=False) writes it.
func TestMarshalWritesTheBeamAgentsForm(t *testing.T) {
	t.Parallel()
	type receipt struct {
		Zeta   string  `json:"zeta"`
		Amount float64 `json:"amount"`
		Tiny   float64 `json:"tiny"`
		Big    float64 `json:"big"`
		Count  int64   `json:"count"`
		HTML   string  `json:"html"`
		Skip   string  `json:"-"`
		Empty  string  `json:"empty,omitempty"`
	}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"a struct: keys sorted, numbers as encoding/json writes them, then non-integers as Python's repr, HTML and UTF-8 kept", receipt{Zeta: "é ✓", Amount: 10, Tiny: 1e-7, Big: 1e16, Count: 1 << 60, HTML: "<a>&\u2028"},
			`{"amount":10,"big":10000000000000000,"count":1152921504606846976,"html":"<a>&` + "\u2028" + `","tiny":1e-07,"zeta":"é ✓"}`},
		{"a map of any", map[string]any{"b": 1.5, "a": []any{true, nil, "x\n"}}, `{"a":[true,null,"x\n"],"b":1.5}`},
		{"raw text with big integers and escapes", []byte(`not json`), `"bm90IGpzb24="`},
		{"control characters", "\x00\x1f\t", `"\u0000\u001f\t"`},
		{"float64 in a generic value: always a float", []any{0.1, math.Copysign(0, -1), 100.0, 1e-5, 0.0001, 1e16}, `[0.1,-0.0,100.0,1e-05,0.0001,1e+16]`},
		{"json.Number keeps an integer's digits", []any{json.Number("123456789012345678901234567890"), json.Number("1.50")}, `[123456789012345678901234567890,1.5]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := canonjson.Marshal(tt.v)
			if err != nil || string(got) != tt.want {
				t.Errorf("Marshal = %s, %v\nwant %s", got, err, tt.want)
			}
		})
	}
}

func TestMarshalRefusesWhatJSONCannotHold(t *testing.T) {
	t.Parallel()
	type node struct {
		Next *node `json:"next"`
	}
	cycle := &node{}
	cycle.Next = cycle
	nan := 0.0
	nan /= nan
	for name, v := range map[string]any{
		"NaN":                  nan,
		"NaN in a struct":      struct{ F float64 }{nan},
		"a cycle":              cycle,
		"a number that is not": map[string]any{"n": json.Number("12abc")},
		"a channel":            make(chan int),
	} {
		if got, err := canonjson.Marshal(v); err == nil {
			t.Errorf("%s: Marshal = %s, nil; want an error", name, got)
		} else if !strings.HasPrefix(err.Error(), "canonjson: ") {
			t.Errorf("%s: error %q does not start with canonjson:", name, err)
		}
	}
}
