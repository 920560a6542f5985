package provider_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/provider"
)

func compile(t *testing.T, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("not a JSON Schema: %v\n%s", err, schema)
	}
	return s
}

func valid(t *testing.T, s *jsonschema.Schema, args string) bool {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v) == nil
}

// dropNulls removes members whose value is null, at any depth: what "null
// means not given" asks of whoever reads a strict-mode call.
func dropNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
			} else {
				v[k] = dropNulls(e)
			}
		}
	case []any:
		for i, e := range v {
			v[i] = dropNulls(e)
		}
	}
	return v
}

// A call the model makes under the strict form means, once its nulls are read
// as "not given", a call the manifest accepts; and what strict mode moved into
// the description is still enforced by the manifest's schema, which toolreg
// validates against whatever form the model saw.
func TestStrictCallsMeanWhatTheManifestAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		spec           *toolreg.Spec
		args           string
		strictOK       bool
		manifestOKNull bool // the manifest's verdict once nulls are dropped
	}{
		{"nulls for optional params are absent params", spec("lookup_customer"),
			`{"customer_id":"c_abc","limit":null,"status":null}`, true, true},
		{"values for optional params are kept", spec("lookup_customer"),
			`{"customer_id":"c_abc","limit":5,"status":"open"}`, true, true},
		{"strict mode makes the model name every param", spec("lookup_customer"),
			`{"customer_id":"c_abc"}`, false, true},
		{"a moved maxLength is still enforced by the manifest", spec("lookup_customer"),
			`{"customer_id":"c_` + strings.Repeat("a", 45) + `","limit":null,"status":null}`, true, false},
		{"a kept minimum is enforced by both", spec("lookup_customer"),
			`{"customer_id":"c_abc","limit":0,"status":null}`, false, false},
		{"null is not a value of a required param", spec("lookup_customer"),
			`{"customer_id":null,"limit":null,"status":null}`, false, false},
		{"a null nested member is an absent member", spec("tag_items"),
			`{"items":[{"sku":"a1","note":null}],"tags":null}`, true, true},
		{"a moved uniqueItems is still enforced by the manifest", spec("tag_items"),
			`{"items":[{"sku":"a1","note":null},{"sku":"a1","note":null}],"tags":null}`, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := provider.Render(provider.OpenAIStrict, tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			var tool struct {
				Function struct{ Parameters json.RawMessage }
			}
			if err := json.Unmarshal(r.JSON, &tool); err != nil {
				t.Fatal(err)
			}
			strict := compile(t, tool.Function.Parameters)
			manifest := compile(t, tt.spec.ParametersSchema())
			if got := valid(t, strict, tt.args); got != tt.strictOK {
				t.Errorf("strict schema accepts %s: %v, want %v", tt.args, got, tt.strictOK)
			}
			var v any
			if err := json.Unmarshal([]byte(tt.args), &v); err != nil {
				t.Fatal(err)
			}
			stripped, _ := json.Marshal(dropNulls(v))
			if got := valid(t, manifest, string(stripped)); got != tt.manifestOKNull {
				t.Errorf("manifest schema accepts %s: %v, want %v", stripped, got, tt.manifestOKNull)
			}
		})
	}
}
