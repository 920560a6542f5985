package effector

import "github.com/beam-agents/toolreg"

// Run is the sanctioned caller of Unwrap: not reported.
func Run(t *toolreg.Tool) any { return t.Unwrap() }
