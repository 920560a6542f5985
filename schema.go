package toolreg

import _ "embed"

// SchemaCUE is the text of schema.cue, the CUE schema every tool manifest is
// validated against: by package loader at startup and by `cue vet` in CI.
// It defines #Tool, #Param and #Schema in CUE package toolreg, and the
// top-level tools struct a CUE manifest declares its tools in. Treat it as
// read-only.
//
//go:embed schema.cue
var SchemaCUE string
