package jsonscan

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// Each step is held to encoding/json: what it accepts, encoding/json accepts
// and reads the same way; what it refuses is not JSON, or is one of the
// things its comment says it leaves to encoding/json.

var strSeeds = []string{
	`""`, `"a"`, `"abc"x`, `"a`, `"`, ``, `x`, ` "a"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u2028\uFFFF\u0000"`,
	`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00x"`, `"\ud83d\u0041"`, `"\u12"`, `"\uzzzz"`, `"\x"`, `"\`, `"a\`,
	"\"é😀\"", "\"\xff\"", "\"\xed\xa0\x80\"", "\"a\tb\"", "\"\x7f\"", "\"\xe2\x80\"", `"\u0022"`, `"\\"`,
	`"<b> & \u003cb\u003e"`, `"x\u"`, `"x\u0"`, `"\""`, `"a"b"`, "\"\x00\"", `"\u00"`, `"\/"`,
}

// jsonString returns the JSON string at the start of b and its length, as
// encoding/json reads it, or !ok when b does not start with one.
func jsonString(b []byte) (v string, n int, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", 0, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	tok, err := d.Token()
	if err != nil {
		return "", 0, false
	}
	v, ok = tok.(string)
	return v, int(d.InputOffset()), ok
}

// hasSurrogateEscape reports whether the JSON string text raw (quotes
// included) holds a \u escape of a surrogate.
func hasSurrogateEscape(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if i+5 < len(raw) && raw[i+1] == 'u' {
			r, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 32)
			if err == nil && utf16.IsSurrogate(rune(r)) {
				return true
			}
		}
		i++
	}
	return false
}

func checkStr(t *testing.T, b []byte) {
	want, n, isString := jsonString(b)
	v, next, owned, ok := Str(b, 0)
	if !ok {
		if next != 0 {
			t.Fatalf("Str(%q) gave up at %d, not at 0", b, next)
		}
		if isString && utf8.Valid(b[:n]) && !hasSurrogateEscape(b[:n]) {
			t.Fatalf("Str(%q) gave up on a string encoding/json reads as %q", b, want)
		}
		return
	}
	if !isString {
		t.Fatalf("Str(%q) = %q; encoding/json reads no string there", b, v)
	}
	if string(v) != want || next != n {
		t.Fatalf("Str(%q) = %q ending at %d; encoding/json reads %q ending at %d", b, v, next, want, n)
	}
	if !owned && len(v) > 0 && &v[0] != &b[1] {
		t.Fatalf("Str(%q): v is not owned, yet not the input's text", b)
	}
	if owned && len(v) > 0 && &v[0] == &b[1] {
		t.Fatalf("Str(%q): v is owned, yet the input's text", b)
	}
	// Plain reads the strings that mean themselves, and no others.
	p, pnext, pok := Plain(b, 0)
	plain := !bytes.ContainsFunc(b[1:n-1], func(r rune) bool { return r == '\\' || r < 0x20 || r >= utf8.RuneSelf })
	switch {
	case pok != plain:
		t.Fatalf("Plain(%q) = %v; the string is plain: %v", b, pok, plain)
	case pok && (string(p) != want || pnext != n):
		t.Fatalf("Plain(%q) = %q ending at %d; encoding/json reads %q ending at %d", b, p, pnext, want, n)
	case !pok && pnext != 0:
		t.Fatalf("Plain(%q) gave up at %d, not at 0", b, pnext)
	}
}

func TestStrReadsWhatEncodingJSONReads(t *testing.T) {
	t.Parallel()
	for _, s := range strSeeds {
		checkStr(t, []byte(s))
	}
	for c := range 0x100 {
		checkStr(t, []byte{'"', 'a', byte(c), 'b', '"'})
		checkStr(t, []byte{'"', '\\', byte(c), '"'})
	}
}

func FuzzStr(f *testing.F) {
	for _, s := range strSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkStr(t, b)
		checkStr(t, append([]byte{'"'}, b...))
	})
}

var numberSeeds = []string{
	`0`, `-0`, `1`, `-1`, `01`, `-01`, `-`, `+1`, `1.`, `1.0`, `.5`, `1e3`, `1E+3`, `1e-3`, `1e`, `1e+`, `0x1`,
	`1,`, `1}`, `1]`, `1:`, `1 `, "1\n", `1x`, `1.5x`, `1true`, `-x`, ``, `x`,
	`9223372036854775807`, `9223372036854775808`, `-9223372036854775808`, `18446744073709551615`,
	`18446744073709551616`, `9999999999999999999`, `10000000000000000000`, `00`, `1.0e5`, `1.e5`, `-0.0e-0`,
}

func isDelimOrEnd(b []byte, i int) bool { return i == len(b) || isDelim(b[i]) }

func checkNumber(t *testing.T, b []byte) {
	k := 0 // where a number would end: at the first delimiter
	for !isDelimOrEnd(b, k) {
		k++
	}
	isNumber := k > 0 && (b[0] == '-' || '0' <= b[0] && b[0] <= '9') && json.Valid(b[:k])
	next, isInt, ok := Number(b, 0)
	switch {
	case ok != isNumber:
		t.Fatalf("Number(%q) ok = %v; encoding/json reads a number in %q: %v", b, ok, b[:k], isNumber)
	case !ok && next != 0:
		t.Fatalf("Number(%q) gave up at %d, not at 0", b, next)
	case !ok:
		return
	case next != k:
		t.Fatalf("Number(%q) ends at %d, want %d", b, next, k)
	case isInt == bytes.ContainsAny(b[:k], ".eE"):
		t.Fatalf("Number(%q) isInt = %v", b, isInt)
	}
	tok := string(b[:k])
	mag, neg, inext, iok := Int(b, 0)
	digits := strings.TrimPrefix(tok, "-")
	wantOK := isInt && len(digits) <= 19
	switch {
	case iok != wantOK:
		t.Fatalf("Int(%q) ok = %v, want %v", b, iok, wantOK)
	case !iok && inext != 0:
		t.Fatalf("Int(%q) gave up at %d, not at 0", b, inext)
	case !iok:
		return
	case inext != k || neg != strings.HasPrefix(tok, "-"):
		t.Fatalf("Int(%q) = %d, %v ending at %d", b, mag, neg, inext)
	}
	want, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || want != mag {
		t.Fatalf("Int(%q) = %d; strconv reads %d (%v)", b, mag, want, err)
	}
	var n json.Number
	if err := json.Unmarshal(b[:k], &n); err != nil || string(n) != tok {
		t.Fatalf("encoding/json reads %q as %q (%v)", b[:k], n, err)
	}
}

func TestNumberReadsWhatEncodingJSONReads(t *testing.T) {
	t.Parallel()
	for _, s := range numberSeeds {
		checkNumber(t, []byte(s))
	}
}

func FuzzNumber(f *testing.F) {
	for _, s := range numberSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkNumber(t, b)
	})
}

func TestStructure(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in         string
		next       int
		more, ok   bool
		stepString string
	}{
		{"{}", 2, false, true, "open"},
		{"{ \t\n\r}x", 6, false, true, "open"},
		{`{ "a"`, 2, true, true, "open"},
		{`[1]`, 0, false, false, "open"},
		{``, 0, false, false, "open"},
		{` , "b"`, 3, true, true, "next"},
		{` }`, 2, false, true, "next"},
		{`]`, 0, false, false, "next"},
		{` ;`, 1, false, false, "next"},
		{``, 0, false, false, "next"},
	} {
		var next int
		var more, ok bool
		if tt.stepString == "open" {
			next, more, ok = Open([]byte(tt.in), 0, '{', '}')
		} else {
			next, more, ok = Next([]byte(tt.in), 0, '}')
		}
		if next != tt.next || more != tt.more || ok != tt.ok {
			t.Errorf("%s(%q) = %d, %v, %v; want %d, %v, %v", tt.stepString, tt.in, next, more, ok, tt.next, tt.more, tt.ok)
		}
	}
	for _, tt := range []struct {
		in   string
		next int
		ok   bool
	}{{":", 1, true}, {" : x", 3, true}, {"x", 0, false}, {" ", 1, false}, {"", 0, false}} {
		if next, ok := Colon([]byte(tt.in), 0); next != tt.next || ok != tt.ok {
			t.Errorf("Colon(%q) = %d, %v; want %d, %v", tt.in, next, ok, tt.next, tt.ok)
		}
	}
	for _, tt := range []struct {
		in   string
		next int
		ok   bool
	}{{"null", 4, true}, {"null,", 4, true}, {"null}", 4, true}, {"null ", 4, true}, {"nullx", 0, false}, {"nul", 0, false}, {"Null", 0, false}} {
		if next, ok := Literal([]byte(tt.in), 0, "null"); next != tt.next || ok != tt.ok {
			t.Errorf("Literal(%q, null) = %d, %v; want %d, %v", tt.in, next, ok, tt.next, tt.ok)
		}
	}
	// JSON whitespace is these four bytes; no other space, not even U+00A0
	// or a form feed, which encoding/json refuses.
	for c := range 0x100 {
		b := []byte{byte(c), '"', '"'}
		want := 0
		if json.Valid(b) {
			want = 1
		}
		if got := WS(b, 0); got != want {
			t.Errorf("WS(%q) = %d, want %d", b, got, want)
		}
	}
}

// AppendEscape reads each escape as encoding/json does, or gives up on it
// (a surrogate, or no escape at all).
func TestAppendEscape(t *testing.T) {
	t.Parallel()
	var escapes [][]byte
	for c := range 0x100 {
		escapes = append(escapes, []byte{'\\', byte(c)}, []byte{'\\', byte(c), '0', '0', 'e', '9'})
	}
	for _, u := range []string{`\u0000`, `\u0041`, `\uFFFF`, `\ud7ff`, `\ud800`, `\udfff`, `\ue000`, `\u12`, `\u12g4`, `\u`, `\`} {
		escapes = append(escapes, []byte(u))
	}
	for _, e := range escapes {
		got, n, ok := AppendEscape([]byte("x"), e)
		var want string
		err := json.Unmarshal(append(append([]byte{'"'}, e...), '"'), &want)
		switch {
		case ok && err != nil:
			t.Errorf("AppendEscape(%q) = %q; encoding/json refuses it: %v", e, got, err)
		case ok && "x"+want != string(got)+string(e[n:]):
			t.Errorf("AppendEscape(%q) = %q, %d; encoding/json reads %q", e, got, n, want)
		case !ok && err == nil && !hasSurrogateEscape(e):
			t.Errorf("AppendEscape(%q) gave up; encoding/json reads %q", e, want)
		}
	}
}
