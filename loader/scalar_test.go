package loader

import (
	"fmt"
	"strconv"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The converter reads plain decimal integers and true/false without a YAML
// decode; every other spelling goes through the decode. Both must give what
// the decode gives.
func TestScalarShortcutsAgreeWithTheDecode(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"0", "7", "-3", "10", "9223372036854775807", "-9223372036854775808",
		"+5", "05", "-0", "0x1F", "0o17", "1000000", "true", "false", "True", "FALSE", "yes", "!!int 12", "!!bool true"} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte("v: "+v), &doc); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		n := doc.Content[0].Content[1]
		c := &converter{file: "f.yaml"}
		got := c.scalar(n)
		var want string
		var k kind
		switch n.ShortTag() {
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			want, k = strconv.FormatBool(b), kindBool
		case "!!int":
			var x any
			if err := n.Decode(&x); err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			want, k = fmt.Sprint(x), kindInt
		default:
			want, k = n.Value, kindString
			if text, kk, ok := jsonNumber(n.Value); ok && n.Style == 0 {
				want, k = text, kk
			}
		}
		if got.kind != k || got.text != want || got.bad {
			t.Errorf("%q: converted to kind %v %q (bad %v), want kind %v %q", v, got.kind, got.text, got.bad, k, want)
		}
	}
}
