package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/provider"
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

With -provider it prints the tools list in that provider's accepted form
instead: openai (Chat Completions), openai-responses, openai-strict,
openai-strict-responses, anthropic, anthropic-strict, gemini,
gemini-jsonschema or mcp (tools/list entries). A form that moves or drops a
keyword, or keeps one the provider does not enforce, says so on stderr, one
note a line; a tool the form cannot express, or a list the provider refuses
(more tools than it takes in one request), is reported, and the exit status
is then 1.

When a manifest is invalid it prints vet's findings on stderr, nothing on
stdout, and exits 1. Paths default to ./manifests.

With -manifest it prints instead the JSON Schema (draft 2020-12) of the
manifest format itself: one YAML document or JSON file holding one tool, as
cue vet -d '#Tool' checks it. It is generated from schema.cue (toolreg's
schema.json); point an editor at it to validate manifests as you type, as
toolreg init sets up. It takes no paths.
`,
	setup: func(fs *flag.FlagSet) func(*env, []string) int {
		form := fs.String("provider", "", "render for this provider `form` ("+strings.Join(provider.Forms(), ", ")+")")
		manifest := fs.Bool("manifest", false, "print the JSON Schema of the manifest format (for editors), not the tools' schemas")
		return func(e *env, paths []string) int {
			if *manifest {
				if len(paths) > 0 || *form != "" {
					fmt.Fprintln(e.stderr, "toolreg schema: -manifest prints the format's JSON Schema, which depends on no manifest and no provider: drop the paths and -provider")
					return exitUsage
				}
				fmt.Fprint(e.stdout, toolreg.SchemaJSON())
				return exitOK
			}
			if *form != "" && !provider.Known(*form) {
				fmt.Fprintf(e.stderr, "toolreg schema: %v\n", &provider.UnknownFormError{Name: *form})
				return exitUsage
			}
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
			var list any = r.ToolsSchema()
			status := exitOK
			if *form != "" {
				set, err := r.ProviderRender(*form)
				if set == nil {
					fmt.Fprintf(e.stderr, "toolreg schema: %v\n", err)
					return exitFindings
				}
				for _, n := range set.Notes {
					fmt.Fprintf(e.stderr, "%s\n", n)
				}
				for _, f := range set.Findings {
					if f.Severity == provider.Error {
						fmt.Fprintln(e.stderr, f)
						status = exitFindings
					}
				}
				if err != nil {
					status = exitFindings
				}
				list = set.List()
			}
			// Indented, and with <, > and & in descriptions left as they are written.
			enc := json.NewEncoder(e.stdout)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(list); err != nil {
				fmt.Fprintf(e.stderr, "toolreg schema: %v\n", err)
				return exitFindings
			}
			return status
		}
	},
}
