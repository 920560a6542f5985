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
	// Gate, for a remote tool, is whether it is offered; the Tool reads it
	// (Tool.Withdrawn). Nil for a local tool.
	Gate *Gate
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

// Contract returns the contract-only *toolreg.Tool of spec (a *toolreg.Spec)
// that reads gate: the pipeline's entry of a side-effecting remote tool, which
// holds no function but is withdrawn with it. Package toolreg sets it in its
// init.
var Contract func(spec any, gate *Gate) any

// Remote is the binding of one remote tool, as package remote makes it.
type Remote struct {
	// Name is the manifest's tool name.
	Name string
	// Effect says the manifest declares side_effect: true; it must agree.
	Effect bool
	// Call sends args, checked and normalized against the manifest
	// (canonical JSON, defaults applied), to the server and returns the
	// result. It is the bound function: the effector's ToolRunner calls it
	// for a side-effecting tool, Tool.Call for a read-only one.
	Call func(ctx context.Context, args json.RawMessage) (json.RawMessage, error)
	// Gate is the tool's availability.
	Gate *Gate
}

// BindRemote records r in binder, a *bindings.Binder, for Bind to check and
// build. Package bindings sets it in its init; package remote calls it, so
// that a remote binding is made only by the package that connects to the
// server and checks its drift.
var BindRemote func(binder any, r *Remote)
