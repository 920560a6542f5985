//go:build ignore

// Command gen_main writes schema.json, the JSON Schema of a manifest document,
// from schema.cue; the module root's go:generate line runs it.
package main

import (
	"fmt"
	"os"

	"github.com/beam-agents/toolreg/internal/manifestschema"
)

func main() {
	src, err := os.ReadFile("schema.cue")
	if err == nil {
		var out []byte
		out, err = manifestschema.Manifest(src)
		if err == nil {
			err = os.WriteFile("schema.json", out, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
