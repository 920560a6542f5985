package argcheck

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testSchema is what toolreg renders for a search tool: a required string, an
// integer with a default and bounds, an optional boolean, an array of unique
// strings, a nested object with a defaulted member, and an enum.
const testSchema = `{"type":"object","properties":{
	"query":{"type":"string","minLength":1,"maxLength":10,"pattern":"^[a-z ]+$"},
	"limit":{"type":"integer","default":10,"minimum":1,"maximum":100},
	"exact":{"type":"boolean"},
	"ratio":{"type":"number","exclusiveMinimum":0},
	"tags":{"type":"array","items":{"type":"string"},"uniqueItems":true,"maxItems":3},
	"counts":{"type":"array","items":{"type":"integer"}},
	"mode":{"type":"string","enum":["fast","slow"]},
	"opts":{"type":"object","properties":{"depth":{"type":"integer","default":2},"deep":{"type":"boolean"}},"required":["deep"],"additionalProperties":false},
	"meta":{"type":"object","additionalProperties":{"type":"integer"}},
	"email":{"type":"string","format":"email"}
},"required":["query"],"additionalProperties":false}`

func mustCompile(t testing.TB, schema string, strict bool) *Checker {
	t.Helper()
	c, err := Compile([]byte(schema), strict)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCheckAcceptsAndNormalizes(t *testing.T) {
	t.Parallel()
	lax := mustCompile(t, testSchema, false)
	strict := mustCompile(t, testSchema, true)
	tests := []struct {
		name   string
		strict bool
		args   string
		want   string
	}{
		{"a plain call gains the default limit", false, `{"query":"abc"}`, `{"limit":10,"query":"abc"}`},
		{"an integer given as a string is coerced", false, `{"query":"a","limit":"20"}`, `{"limit":20,"query":"a"}`},
		{"an integer string may carry sign, spaces and decimal zeros", false, `{"query":"a","limit":" +20.00 "}`, `{"limit":20,"query":"a"}`},
		{"an integer given as 10.0 is an integer", false, `{"query":"a","limit":10.0}`, `{"limit":10,"query":"a"}`},
		{"an integer given as 1e1 is an integer", false, `{"query":"a","limit":1e1}`, `{"limit":10,"query":"a"}`},
		{"a boolean may be true for an integer, as in Pydantic", false, `{"query":"a","limit":true}`, `{"limit":1,"query":"a"}`},
		{"a number given as a string is coerced", false, `{"query":"a","ratio":"2.5"}`, `{"limit":10,"query":"a","ratio":2.5}`},
		{"a boolean given as a Pydantic string is coerced", false, `{"query":"a","exact":"YES"}`, `{"exact":true,"limit":10,"query":"a"}`},
		{"a boolean given as 0 is false", false, `{"query":"a","exact":0}`, `{"exact":false,"limit":10,"query":"a"}`},
		{"a boolean given as 1.0 is true", false, `{"query":"a","exact":1.0}`, `{"exact":true,"limit":10,"query":"a"}`},
		{"coercion reaches array items", false, `{"query":"a","counts":["1",2.0,3]}`, `{"counts":[1,2,3],"limit":10,"query":"a"}`},
		{"coercion and defaults reach nested objects", false, `{"query":"a","opts":{"deep":"off"}}`, `{"limit":10,"opts":{"deep":false,"depth":2},"query":"a"}`},
		{"coercion reaches additional properties", false, `{"query":"a","meta":{"x":"7"}}`, `{"limit":10,"meta":{"x":7},"query":"a"}`},
		{"null for an optional param means absent and the default applies", false, `{"query":"a","limit":null,"exact":null}`, `{"limit":10,"query":"a"}`},
		{"null for an optional nested member means absent", true, `{"query":"a","opts":{"deep":true,"depth":null}}`, `{"limit":10,"opts":{"deep":true,"depth":2},"query":"a"}`},
		{"strict mode still reads 10.0 as the integer 10", true, `{"query":"a","limit":10.0}`, `{"limit":10,"query":"a"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := lax
			if tt.strict {
				c = strict
			}
			m, err := c.Check([]byte(tt.args))
			if err != nil {
				t.Fatalf("Check(%s): %v", tt.args, err)
			}
			got, _ := json.Marshal(m)
			var gotV, wantV any
			_ = json.Unmarshal(got, &gotV)
			_ = json.Unmarshal([]byte(tt.want), &wantV)
			if diff := cmp.Diff(wantV, gotV); diff != "" {
				t.Errorf("Check(%s) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestCheckReportsEveryProblem(t *testing.T) {
	t.Parallel()
	lax := mustCompile(t, testSchema, false)
	strict := mustCompile(t, testSchema, true)
	tests := []struct {
		name   string
		strict bool
		args   string
		want   []Problem
	}{
		{"missing required", false, `{}`, []Problem{{"/query", "string (required)", "nothing"}}},
		{"null for a required param is a wrong type", false, `{"query":null}`, []Problem{{"/query", "string", "null"}}},
		{"a string param takes only strings", false, `{"query":5}`, []Problem{{"/query", "string", "5"}}},
		{"an unknown key", false, `{"query":"a","qeury":"b"}`, []Problem{{"/qeury", "only known parameters (counts, email, exact, limit, meta, mode, opts, query, ratio, tags)", "an unknown parameter"}}},
		{"a non-integer string", false, `{"query":"a","limit":"ten"}`, []Problem{{"/limit", "integer", `"ten"`}}},
		{"a fractional integer", false, `{"query":"a","limit":"2.5"}`, []Problem{{"/limit", "integer", `"2.5"`}}},
		{"nan is not a number", false, `{"query":"a","ratio":"nan"}`, []Problem{{"/ratio", "number", `"nan"`}}},
		{"a boolean string outside Pydantic's list", false, `{"query":"a","exact":"maybe"}`, []Problem{{"/exact", "boolean", `"maybe"`}}},
		{"2 is not a boolean", false, `{"query":"a","exact":2}`, []Problem{{"/exact", "boolean", "2"}}},
		{"strict mode refuses a string integer", true, `{"query":"a","limit":"20"}`, []Problem{{"/limit", "integer", `"20"`}}},
		{"strict mode refuses a string boolean", true, `{"query":"a","exact":"true"}`, []Problem{{"/exact", "boolean", `"true"`}}},
		{"bounds, lengths, patterns and enums at once", false,
			`{"query":"ABCDEFGHIJKL","limit":0,"mode":"medium","ratio":0,"tags":["a","a"],"email":"nope"}`,
			[]Problem{
				{"/email", "a string in the format email", `"nope"`},
				{"/limit", "at least 1", "0"},
				{"/mode", `one of "fast", "slow"`, `"medium"`},
				{"/query", "a string matching the pattern ^[a-z ]+$", `"ABCDEFGHIJKL"`},
				{"/query", "at most 10 characters", `"ABCDEFGHIJKL" (12 characters)`},
				{"/ratio", "greater than 0", "0"},
				{"/tags", "unique items", "items 0 and 1 equal"},
			}},
		{"problems inside arrays and nested objects", false, `{"query":"a","counts":[1,"x"],"opts":{"depth":1,"zz":1}}`,
			[]Problem{
				{"/counts/1", "integer", `"x"`},
				{"/opts/deep", "boolean (required)", "nothing"},
				{"/opts/zz", "only known properties (deep, depth)", "an unknown property"},
			}},
		{"malformed JSON", false, `{"query":`, []Problem{{"", "one JSON object of arguments",
			"malformed JSON: the text ends at line 1, column 10 (byte offset 9) before the value is complete: expected the rest of it (close every string, '[' and '{'); send one JSON object and nothing else"}}},
		{"trailing text", false, `{"query":"a"} x`, []Problem{{"", "one JSON object of arguments",
			"malformed JSON at line 1, column 15 (byte offset 14), after `{\"query\":\"a\"} `: expected nothing after the arguments object, found 'x'; send one JSON object and nothing else"}}},
		{"a non-object", false, `[1]`, []Problem{{"", "one JSON object of arguments", "[1]; send one JSON object and nothing else"}}},
		{"a number beyond float64", false, `{"query":"a","ratio":1.5e400}`, []Problem{{"/ratio", "a number a float64 can hold (magnitude below 1.8e308)", "1.5e400"}}},
		{"a number too large to compare cheaply", false, `{"query":"a","limit":1e99999}`, []Problem{{"/limit", "a number of at most 400 characters with an exponent below 1000", "1e99999"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := lax
			if tt.strict {
				c = strict
			}
			_, err := c.Check([]byte(tt.args))
			var ae *Error
			if !errors.As(err, &ae) {
				t.Fatalf("Check(%s) = %v, want an *Error", tt.args, err)
			}
			if diff := cmp.Diff(tt.want, ae.Problems); diff != "" {
				t.Errorf("Check(%s) problems (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestEmptyArgumentsMeanAnEmptyObject(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, `{"type":"object","properties":{"n":{"type":"integer","default":3}},"required":[],"additionalProperties":false}`, false)
	for _, args := range []string{"", "  \n", "null", "{}"} {
		m, err := c.Check([]byte(args))
		if err != nil {
			t.Fatalf("Check(%q): %v", args, err)
		}
		if diff := cmp.Diff(map[string]any{"n": json.Number("3")}, m); diff != "" {
			t.Errorf("Check(%q) (-want +got):\n%s", args, diff)
		}
	}
}
