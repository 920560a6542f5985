package toolreg_test

import (
	"strings"
	"testing"

	"github.com/beam-agents/toolreg"
)

func TestCanonicalizeRefusesTextThatIsNotOneValue(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{"a":1} x`, `1 }`, `1 2`, `{"a":1}{}`, ``, `{"a":`} {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			if got, err := toolreg.Canonicalize([]byte(in)); err == nil {
				t.Errorf("Canonicalize(%q) = %s, nil; want an error", in, got)
			}
		})
	}
}

func TestCanonicalizeKeepsOneValueWithSpaceAround(t *testing.T) {
	t.Parallel()
	got, err := toolreg.Canonicalize([]byte(" {\"b\": 1.50, \"a\": [true, null, \"é\"]}\n\t"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":[true,null,"é"],"b":1.5}`; string(got) != want {
		t.Errorf("Canonicalize = %s; want %s", got, want)
	}
}

func TestCanonicalizeSaysWhereTheExtraTextIs(t *testing.T) {
	t.Parallel()
	_, err := toolreg.Canonicalize([]byte(`{"a":1} x`))
	if err == nil || !strings.Contains(err.Error(), "at byte") {
		t.Errorf("error = %v; want one naming the byte where the extra text starts", err)
	}
}

// Invalid UTF-8 becomes U+FFFD, the same bytes whether the string is the
// whole value or a member of a struct (encoded through encoding/json first).
func TestCanonicalJSONWritesInvalidUTF8AsTheReplacementCharacterEverywhere(t *testing.T) {
	t.Parallel()
	top, err := toolreg.CanonicalJSON("a\xffb")
	if err != nil {
		t.Fatal(err)
	}
	nested, err := toolreg.CanonicalJSON(struct {
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
