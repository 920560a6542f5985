package toolreg

import _ "embed"

//go:generate go run ./internal/manifestschema/gen_main.go

//go:embed schema.cue
var schemaCUE string

//go:embed schema.json
var schemaJSON string

// SchemaCUE returns the text of schema.cue, the CUE schema every tool manifest
// is validated against: by package loader at startup and by `cue vet` in CI.
// It defines #Tool, #Param and #Schema in CUE package toolreg, and the
// top-level tools struct a CUE manifest declares its tools in. It is a
// function, not a variable, so that no package can change the schema another
// one validates against.
func SchemaCUE() string { return schemaCUE }

// SchemaJSON returns the text of schema.json: the JSON Schema (draft
// 2020-12) of one manifest document (a YAML document or a JSON file holding
// one tool), translated from schema.cue by go generate, for editors that
// validate as one types. It accepts what cue vet -d '#Tool' accepts; the
// loader's own rules (a default that meets its constraints, a name unique
// across files, ...) are checked by toolreg vet alone.
func SchemaJSON() string { return schemaJSON }
