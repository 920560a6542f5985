package toolbind

import (
	"context"
	"encoding/json"

	"github.com/beam-agents/toolreg/internal/argcheck"
)

// Binding is what package bindings attaches to a Spec: the Go function and
// typed ways to reach it.
type Binding struct {
	// Func is the bound function, a func(context.Context, A) (R, error).
	Func any
	// Decode validates args against the tool's contract (the same rules as
	// Tool.CheckArgs), applies defaults, and returns the function's argument
	// value A, ready to pass to Func. On bad arguments it returns a
	// *toolreg.ToolArgumentError.
	Decode func(args json.RawMessage) (any, error)
	// Call decodes args as Decode does and calls Func with them. It holds no
	// side-effect guard: Tool.Call holds it.
	Call func(ctx context.Context, args json.RawMessage) (any, error)
	// Args is the argument checker Decode uses, compiled once by bindings;
	// the bound Tool's CheckArgs uses it too rather than compiling the params
	// schema again. Nil: the Tool compiles its own.
	Args *argcheck.Checker
}

// Attach returns a *toolreg.Tool for spec (a *toolreg.Spec) with b bound to
// it. Package toolreg sets it in its init; its types are spelled any because
// this package cannot import toolreg, which imports it. Callers convert:
// toolbind.Attach(spec, b).(*toolreg.Tool).
var Attach func(spec any, b *Binding) any

// ArgumentError turns an error of package internal/argcheck into a
// *toolreg.ToolArgumentError of the named tool; any other error is returned
// as is. Package toolreg sets it in its init, so that bindings reports bad
// arguments as every other path does.
var ArgumentError func(tool string, err error) error
