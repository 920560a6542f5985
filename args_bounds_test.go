package toolreg_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
)

// loadTool loads one YAML manifest and returns its tool.
func loadTool(t *testing.T, manifest string) *toolreg.Tool {
	t.Helper()
	specs, err := loader.LoadFS(fstest.MapFS{"m.yaml": {Data: []byte(manifest)}}, "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return toolreg.NewTool(specs[0])
}

// Bounds are kept as the manifest writes them, from the manifest to the check:
// 9007199254740993 is not a float64 (it rounds to ...992), and a bound held
// as one let ...992 through a minimum of ...993.
func TestIntegerBoundsAreEnforcedExactly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		keyword, bound string
		ok, bad        []string
	}{
		{"minimum", "9007199254740993", []string{"9007199254740993", "9007199254740994"}, []string{"9007199254740992"}},
		{"maximum", "9007199254740993", []string{"9007199254740993", "9007199254740992"}, []string{"9007199254740994"}},
		{"exclusiveMinimum", "9007199254740992", []string{"9007199254740993"}, []string{"9007199254740992"}},
		{"exclusiveMaximum", "9007199254740993", []string{"9007199254740992"}, []string{"9007199254740993"}},
		{"multipleOf", "9007199254740993", []string{"18014398509481986", "0"}, []string{"18014398509481984", "9007199254740992"}},
	}
	for _, tc := range tests {
		t.Run(tc.keyword+" "+tc.bound+" is exact", func(t *testing.T) {
			t.Parallel()
			tool := loadTool(t, "name: t\ndescription: d\nparams:\n  n:\n    type: integer\n    "+tc.keyword+": "+tc.bound+"\n")
			if got := string(tool.Spec().ParametersSchema()); !strings.Contains(got, `"`+tc.keyword+`":`+tc.bound) {
				t.Errorf("parameters schema %s does not hold %s: %s as written", got, tc.keyword, tc.bound)
			}
			for _, v := range tc.ok {
				if _, err := tool.CheckArgs(json.RawMessage(`{"n":` + v + `}`)); err != nil {
					t.Errorf("%s refused: %v", v, err)
				}
			}
			for _, v := range tc.bad {
				if _, err := tool.CheckArgs(json.RawMessage(`{"n":` + v + `}`)); err == nil {
					t.Errorf("%s accepted against %s %s", v, tc.keyword, tc.bound)
				}
			}
		})
	}
}

// Whatever CheckArgs accepts for an integer param, an int64 holds: what Act
// stages, the effector (and a tool bound to an int64 field) can decode.
func TestCheckedIntegersFitAnInt64(t *testing.T) {
	t.Parallel()
	tool := loadTool(t, "name: t\ndescription: d\nparams:\n  n:\n    type: integer\n")
	for _, v := range []string{"9223372036854775807", "-9223372036854775808", "9.223372036854775807e18", "0"} {
		out, err := tool.CheckArgs(json.RawMessage(`{"n":` + v + `}`))
		if err != nil {
			t.Errorf("%s refused: %v", v, err)
			continue
		}
		var dst struct{ N int64 }
		if err := json.Unmarshal(out, &dst); err != nil {
			t.Errorf("%s accepted as %s, which an int64 cannot hold: %v", v, out, err)
		}
	}
	for _, v := range []string{"9223372036854775808", "-9223372036854775809", "1e19", "100000000000000000000000", `"9223372036854775808"`} {
		_, err := tool.CheckArgs(json.RawMessage(`{"n":` + v + `}`))
		var ae *toolreg.ToolArgumentError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), "64-bit") {
			t.Errorf("%s: got %v, want it refused as beyond a 64-bit integer", v, err)
		}
	}
}
