package bindings

import (
	"slices"

	"github.com/beam-agents/toolreg"
)

// Specs returns the contracts the Binder was made with, in the order given:
// for a binding helper that needs every tool's contract (toolsearch.Bind).
// The slice is the caller's; the specs are shared and must not be modified.
func (b *Binder) Specs() []*toolreg.Spec { return slices.Clone(b.specs) }
