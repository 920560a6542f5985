package toolreg

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/beam-agents/toolreg/internal/argcheck"
)

// diffSpecs are the contracts the differential test of CheckArgs runs: flat
// scalars with every constraint keyword, and nested objects, maps and arrays.
func diffSpecs() []*Spec {
	i := func(v int) *int { return &v }
	str := func(s Schema) Schema { s.Type = TypeString; return s }
	arr := func(items Schema) Schema { return Schema{Type: TypeArray, Items: &items} }
	tags := arr(Schema{Type: TypeString})
	tags.UniqueItems, tags.MaxItems = true, i(4)
	nums := arr(Schema{Type: TypeNumber, Minimum: json.Number("-1.5")})
	nums.MinItems = i(1)
	flat := []*Param{
		{Name: "query", Schema: str(Schema{MinLength: i(1), MaxLength: i(12), Pattern: "^[^0-9]*$"})},
		{Name: "limit", Schema: Schema{Type: TypeInteger, HasDefault: true, Default: json.Number("10"), Minimum: json.Number("1"), ExclusiveMaximum: json.Number("100.5"), MultipleOf: json.Number("2")}},
		{Name: "exact", Schema: Schema{Type: TypeBoolean, HasDefault: true, Default: false}},
		{Name: "ratio", Schema: Schema{Type: TypeNumber, ExclusiveMinimum: json.Number("0"), Maximum: json.Number("1e20")}, Optional: true},
		{Name: "tags", Schema: tags, Optional: true},
		{Name: "nums", Schema: nums, Optional: true},
		{Name: "mode", Schema: str(Schema{Enum: []any{"fast", "slow"}, HasDefault: true, Default: "fast"})},
		{Name: "level", Schema: Schema{Type: TypeInteger, Enum: []any{json.Number("1"), json.Number("2.0")}}, Optional: true},
		{Name: "email", Schema: str(Schema{Format: "email"}), Optional: true},
	}
	nested := []*Param{
		{Name: "opts", Schema: Schema{Type: TypeObject, HasDefault: true, Default: map[string]any{}, Properties: []*Param{
			{Name: "depth", Schema: Schema{Type: TypeInteger, HasDefault: true, Default: json.Number("2")}},
			{Name: "z", Schema: Schema{Type: TypeNumber}, Optional: true},
			{Name: "a", Schema: Schema{Type: TypeBoolean}, Optional: true},
		}}},
		{Name: "meta", Schema: Schema{Type: TypeObject, AdditionalProperties: &Schema{Type: TypeInteger}}, Optional: true},
		{Name: "rows", Schema: arr(Schema{Type: TypeObject, Properties: []*Param{{Name: "k", Schema: Schema{Type: TypeString}}}}), Optional: true},
		{Name: "grid", Schema: arr(arr(Schema{Type: TypeInteger})), Optional: true},
	}
	return []*Spec{
		{Name: "flat", Description: "Flat.", Params: flat},
		{Name: "flat_strict", Description: "Flat, strict.", Params: flat, Strict: true},
		{Name: "nested", Description: "Nested.", Params: nested},
	}
}

// FuzzCheckArgsAgreesWithReference is the differential test of CheckArgs'
// one-pass path: whenever argcheck's canonical plan takes a call, the
// reference path (coercion, santhosh-tekuri/jsonschema validation,
// canonjson.Marshal) accepts it too and writes the same bytes.
func FuzzCheckArgsAgreesWithReference(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `{`, `{"query":"abc"}`, `{"query":"abc"} `, `{"query":"abc"}x`,
		`{"query":"a","limit":"20","exact":"yes","ratio":"2.5","tags":["b","a"],"nums":[1,"2e3",true],"mode":"slow","level":2}`,
		`{"query":"a","limit":20.0,"exact":1,"ratio":1e20,"nums":[-1.5]}`, `{"query":"a","limit":-0}`, `{"query":"a","limit":-0.0}`,
		`{"query":"a","limit":4,"ratio":0.1,"nums":[0.1,1e-7,1e16,123456789012345678901234567890]}`,
		`{"query":"a","limit":null,"exact":null,"ratio":null,"tags":null}`, `{"query":null}`, `{"query":"a","query":"b"}`,
		`{"query":"caf\u00e9 \"q\" <b>","tags":["\ud83d\ude00","x"]}`, "{\"query\":\"\xff\"}", `{"query":"a","tags":["a","a"]}`,
		`{"query":"a","level":"2"}`, `{"query":"a","level":3}`, `{"query":"a","email":"a@b.co"}`, `{"query":"a","email":"nope"}`,
		`{"query":"a","limit":3}`, `{"query":"a","ratio":0}`, `{"query":"a","ratio":"1e400"}`, `{"query":"a","ratio":1e400}`,
		`{"opts":{"z":1.50,"a":"t"},"meta":{"b":"1","a":2},"rows":[{"k":"x"},{"k":"y"}],"grid":[[1],[]]}`,
		`{"opts":null,"meta":{"a":1,"a":2}}`, `{"opts":{"depth":null}}`, `{"meta":{}}`, `{"rows":[{}]}`,
	} {
		f.Add([]byte(s))
	}
	type tool struct {
		name string
		c    *argcheck.Checker
	}
	var tools []tool
	for _, s := range diffSpecs() {
		c, err := argcheck.Compile(s.ParametersSchema(), s.Strict)
		if err != nil {
			f.Fatal(err)
		}
		tools = append(tools, tool{s.Name, c})
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, tl := range tools {
			ref, refErr := checkArgsReference(tl.name, tl.c, raw)
			fast, ok := tl.c.Canonical(raw)
			if !ok {
				continue
			}
			if refErr != nil {
				t.Fatalf("%s: the one-pass path accepted %q as %s; the reference refuses it: %v", tl.name, raw, fast, refErr)
			}
			if !bytes.Equal(fast, ref) {
				t.Fatalf("%s: %q normalized differently:\nreference %s\none-pass  %s", tl.name, raw, ref, fast)
			}
		}
	})
}

func TestCheckArgsOnePassTakesTheCommonCalls(t *testing.T) {
	t.Parallel()
	specs := diffSpecs()
	for _, tt := range []struct {
		spec *Spec
		args string
	}{
		{specs[0], `{"query":"golang","limit":20,"exact":true,"tags":["go","lang"]}`},
		{specs[0], `{"query":"a","limit":"20","exact":"yes","ratio":"2.5","nums":[1,"2e3",true]}`},
		{specs[1], `{"query":"a","limit":20.0,"ratio":null}`},
		{specs[2], `{"opts":{"z":1.50,"a":"t"},"meta":{"b":"1","a":2},"rows":[{"k":"x"}],"grid":[[1],[]]}`},
	} {
		c, err := argcheck.Compile(tt.spec.ParametersSchema(), tt.spec.Strict)
		if err != nil {
			t.Fatal(err)
		}
		fast, ok := c.Canonical([]byte(tt.args))
		if !ok {
			t.Errorf("%s: the one-pass path left %s to the reference", tt.spec.Name, tt.args)
			continue
		}
		ref, err := checkArgsReference(tt.spec.Name, c, []byte(tt.args))
		if err != nil || !bytes.Equal(fast, ref) {
			t.Errorf("%s: %s: one-pass %s, reference %s (%v)", tt.spec.Name, tt.args, fast, ref, err)
		}
	}
}
