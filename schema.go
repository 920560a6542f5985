package toolreg

import _ "embed"

//go:embed schema.cue
var schemaCUE string

// SchemaCUE returns the text of schema.cue, the CUE schema every tool manifest
// is validated against: by package loader at startup and by `cue vet` in CI.
// It defines #Tool, #Param and #Schema in CUE package toolreg, and the
// top-level tools struct a CUE manifest declares its tools in. It is a
// function, not a variable, so that no package can change the schema another
// one validates against.
func SchemaCUE() string { return schemaCUE }
