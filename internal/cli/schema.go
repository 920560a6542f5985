package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/registry"
)

var schemaCommand = &command{
	name:  "schema",
	args:  "[paths...]",
	short: "print the tools schema of manifests as JSON",
	long: `Schema loads and validates the tool manifests in paths, as vet does, and
prints on stdout the aggregate tools schema a model provider is shown: a JSON
array with one entry per tool, in load order (sorted paths, then document
order), each

	{"name": ..., "description": ..., "parameters": {JSON Schema}}

When a manifest is invalid it prints vet's findings on stderr, nothing on
stdout, and exits 1. Paths default to ./manifests.
`,
	setup: func(fs *flag.FlagSet) func(*env, []string) int {
		return func(e *env, paths []string) int {
			specs, ok := loadSpecs(e, "schema", paths)
			if !ok {
				return exitFindings
			}
			r := registry.New()
			for _, s := range specs {
				if err := r.Register(toolreg.NewTool(s)); err != nil {
					reportErr(e, "schema", err)
					return exitFindings
				}
			}
			// json.Indent, unlike MarshalIndent, leaves <, > and & in
			// descriptions as they are written.
			list := append([]byte{'['}, bytes.Join(asBytes(r.ToolsSchema()), []byte{','})...)
			list = append(list, ']')
			var out bytes.Buffer
			if err := json.Indent(&out, list, "", "  "); err != nil {
				// Each entry is JSON toolreg rendered; failing here is a bug.
				fmt.Fprintf(e.stderr, "toolreg schema: %v\n", err)
				return exitFindings
			}
			out.WriteByte('\n')
			if _, err := out.WriteTo(e.stdout); err != nil {
				fmt.Fprintf(e.stderr, "toolreg schema: %v\n", err)
				return exitFindings
			}
			return exitOK
		}
	},
}

func asBytes(raws []json.RawMessage) [][]byte {
	out := make([][]byte, len(raws))
	for i, r := range raws {
		out[i] = r
	}
	return out
}
