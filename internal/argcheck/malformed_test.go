package argcheck

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Malformed JSON from a model is answered in the model's terms: where (line,
// column and byte offset, with the text just before it), what JSON wanted
// there, what came, and to send one JSON object. Never encoding/json's own
// text ("invalid character 'o' in literal null (expecting 'u')").
func TestMalformedArgumentsSayWhereWhatWasExpectedAndToSendOneObject(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, `{"type":"object","properties":{"limit":{"type":"integer"},"q":{"type":"string"}},"required":[],"additionalProperties":false}`, false)
	tests := []struct {
		name, args, want string
	}{
		{"a Python None", `{"limit": None}`,
			"malformed JSON at line 1, column 11 (byte offset 10), after `{\"limit\": `: expected a JSON value (an object, an array, a string in double quotes, a number, true, false or null), found 'N'; send one JSON object and nothing else"},
		{"a misspelt null", `{"limit": nul1}`,
			"malformed JSON at line 1, column 14 (byte offset 13), after `{\"limit\": nul`: expected 'l' to go on with the literal null, found '1'; send one JSON object and nothing else"},
		{"single quotes", `{'q': 'x'}`,
			"malformed JSON at line 1, column 2 (byte offset 1), after `{`: expected a member name in double quotes, or '}', found '\\''; send one JSON object and nothing else"},
		{"a missing comma, on line 3", "{\n  \"q\": \"a\"\n  \"limit\": 1}",
			"malformed JSON at line 3, column 3 (byte offset 15), after `{\\n  \"q\": \"a\"\\n  `: expected ',' or '}' after a member's value, found '\"'; send one JSON object and nothing else"},
		{"a trailing comma", `{"q": "a",}`,
			"malformed JSON at line 1, column 11 (byte offset 10), after `{\"q\": \"a\",`: expected a member name in double quotes, or '}', found '}'; send one JSON object and nothing else"},
		{"a missing colon", `{"q" "a"}`,
			"malformed JSON at line 1, column 6 (byte offset 5), after `{\"q\" `: expected ':' after a member name, found '\"'; send one JSON object and nothing else"},
		{"a truncated object", `{"q": "a`,
			"malformed JSON: the text ends at line 1, column 9 (byte offset 8) before the value is complete: expected the rest of it (close every string, '[' and '{'); send one JSON object and nothing else"},
		{"two objects", `{"q": "a"}{"q": "b"}`,
			"malformed JSON at line 1, column 11 (byte offset 10), after `{\"q\": \"a\"}`: expected nothing after the arguments object, found '{'; send one JSON object and nothing else"},
		{"leading spaces count in the position", "  \n {\"limit\": x}",
			"malformed JSON at line 2, column 12 (byte offset 14), after `  \\n {\"limit\": `: expected a JSON value (an object, an array, a string in double quotes, a number, true, false or null), found 'x'; send one JSON object and nothing else"},
		{"a raw newline inside a string", "{\"q\": \"a\nb\"}",
			"malformed JSON at line 1, column 9 (byte offset 8), after `{\"q\": \"a`: expected a character allowed in a string (write a newline or other control character as an escape, such as \\n), found '\\n'; send one JSON object and nothing else"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := c.Check([]byte(tt.args))
			var ae *Error
			if !errors.As(err, &ae) || len(ae.Problems) != 1 {
				t.Fatalf("Check(%q) = %v, want one problem", tt.args, err)
			}
			p := ae.Problems[0]
			if p.Path != "" || p.Want != "one JSON object of arguments" {
				t.Errorf("problem at %q wanting %q", p.Path, p.Want)
			}
			if diff := cmp.Diff(tt.want, p.Got); diff != "" {
				t.Errorf("Check(%q) (-want +got):\n%s", tt.args, diff)
			}
			if strings.Contains(p.Got, "invalid character") || strings.Contains(p.Got, "looking for") {
				t.Errorf("encoding/json's own text reaches the model: %s", p.Got)
			}
		})
	}
}

// A non-object is told to send an object too.
func TestANonObjectIsToldToSendOneObject(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, `{"type":"object","properties":{},"required":[],"additionalProperties":false}`, false)
	for _, args := range []string{`[1]`, `"q"`, `42`} {
		_, err := c.Check([]byte(args))
		var ae *Error
		if !errors.As(err, &ae) || len(ae.Problems) != 1 || ae.Problems[0].Want != "one JSON object of arguments" ||
			!strings.HasSuffix(ae.Problems[0].Got, "; send one JSON object and nothing else") {
			t.Errorf("Check(%s) = %v", args, err)
		}
	}
}

// The excerpt before the error is bounded: a megabyte of arguments does not
// come back to the model.
func TestTheExcerptBeforeAnErrorIsShort(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, `{"type":"object","properties":{"q":{"type":"string"}},"required":[],"additionalProperties":false}`, false)
	args := `{"q": "` + strings.Repeat("a", 1<<20) + `", x}`
	_, err := c.Check([]byte(args))
	var ae *Error
	if !errors.As(err, &ae) {
		t.Fatal(err)
	}
	if got := ae.Problems[0].Got; len(got) > 400 || !strings.Contains(got, "byte offset 1048586") {
		t.Errorf("%d bytes: %.300s", len(got), got)
	}
}
