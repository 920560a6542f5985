package loader_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/beam-agents/toolreg/loader"
)

// Tools and params that differ only in descriptions, names and titles are
// checked once for their shape; what the schema refuses in a text it
// constrains is still refused, in a load where the same shape passed first.
func TestShapeSkipsNoTextTheSchemaConstrains(t *testing.T) {
	t.Parallel()
	const tool = `name: %s
description: %s
annotations: {title: %s}
params:
  id:
    type: string
    description: %s
    pattern: "^c_"
  opts:
    type: object
    description: %s
    properties:
      depth: {type: integer, description: %s}
`
	good := func(i int) []byte {
		return fmt.Appendf(nil, tool, fmt.Sprintf("tool_%d", i), fmt.Sprintf("Tool %d.", i), fmt.Sprintf("T%d", i),
			fmt.Sprintf("id %d", i), fmt.Sprintf("opts %d", i), fmt.Sprintf("depth %d", i))
	}
	fsys := fstest.MapFS{}
	for i := range 5 {
		fsys[fmt.Sprintf("a%d.yaml", i)] = &fstest.MapFile{Data: good(i)}
	}
	specs, err := loader.LoadFS(fsys, ".")
	if err != nil || len(specs) != 5 {
		t.Fatalf("LoadFS of good tools = %d specs, %v", len(specs), err)
	}
	bad := map[string]string{
		"a name #Tool refuses":             fmt.Sprintf(tool, "bad name!", "d", "t", "i", "o", "x"),
		"an empty description":             fmt.Sprintf(tool, "tool_x", `""`, "t", "i", "o", "x"),
		"a title that is no string":        fmt.Sprintf(tool, "tool_x", "d", "[1]", "i", "o", "x"),
		"a param description not a string": fmt.Sprintf(tool, "tool_x", "d", "t", "[1]", "o", "x"),
		"a property description a number":  fmt.Sprintf(tool, "tool_x", "d", "t", "i", "o", "{a: 1}"),
	}
	for what, doc := range bad {
		t.Run(what, func(t *testing.T) {
			fs := fstest.MapFS{"z.yaml": {Data: []byte(doc)}}
			for i := range 3 {
				fs[fmt.Sprintf("a%d.yaml", i)] = &fstest.MapFile{Data: good(i)}
			}
			_, err := loader.LoadFS(fs, ".")
			if err == nil || !strings.Contains(err.Error(), "z.yaml") {
				t.Fatalf("LoadFS with %s = %v, want z.yaml refused", what, err)
			}
		})
	}
}
