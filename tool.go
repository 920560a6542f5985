package toolreg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/beam-agents/toolreg/canonjson"
	"github.com/beam-agents/toolreg/internal/toolbind"
)

// Tool is a Spec plus, where the table that holds it runs it, its bound function.
// A Tool made by NewTool alone is a contract: it has a name, description and
// schema, and calling it reports that nothing is bound.
type Tool struct {
	spec    *Spec
	binding *toolbind.Binding
	// gate is a remote tool's availability (remote.go); nil for a local one.
	gate *toolbind.Gate

	args   argChecker    // compiled on first use; see args.go
	result resultChecker // compiled on first use; see result.go

	// The provider-facing schemas, rendered on first use: a server of
	// 10,000 tools that serves another form (MCP's) never holds them.
	render sync.Once
	schema json.RawMessage
	output json.RawMessage
}

// NewTool returns the contract-only Tool of spec. Its schemas are computed on
// first use, once. NewTool does not validate spec: loaded Specs are valid;
// call Spec.Validate on one built by hand.
func NewTool(spec *Spec) *Tool {
	return &Tool{spec: spec}
}

func (t *Tool) rendered() *Tool {
	t.render.Do(func() { t.schema, t.output = toolSchema(t.spec), t.spec.ResultSchema() })
	return t
}

// newBoundTool returns spec's Tool with b bound to it. It is not exported:
// package bindings reaches it through internal/toolbind, after checking that
// b's function agrees with spec, so no package outside this module can attach
// a function to a tool, a side-effecting one least of all.
func newBoundTool(spec *Spec, b *toolbind.Binding) *Tool {
	t := NewTool(spec)
	t.binding = b
	t.gate = b.Gate
	if b.Args != nil { // the binder compiled it: CheckArgs need not again
		t.args.once.Do(func() { t.args.checker = b.Args })
	}
	return t
}

func init() {
	toolbind.Attach = func(spec any, b *toolbind.Binding) any { return newBoundTool(spec.(*Spec), b) }
	toolbind.ArgumentError = argumentErrorFrom
	toolbind.Contract = func(spec any, g *toolbind.Gate) any {
		t := NewTool(spec.(*Spec))
		t.gate = g
		return t
	}
}

func toolSchema(s *Spec) json.RawMessage {
	b := make([]byte, 0, 256)
	b = append(b, `{"name":`...)
	b = canonjson.AppendString(b, s.Name)
	b = append(b, `,"description":`...)
	b = canonjson.AppendString(b, s.Description)
	b = append(b, `,"parameters":`...)
	b = append(b, s.ParametersSchema()...)
	return append(b, '}')
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.spec.Name }

// Description returns the tool's description, as the model is shown it.
func (t *Tool) Description() string { return t.spec.Description }

// SideEffect reports whether the tool changes the world and so runs only
// through an intent and the effector.
func (t *Tool) SideEffect() bool { return t.spec.SideEffect }

// Spec returns the tool's contract. Callers must not modify it.
func (t *Tool) Spec() *Spec { return t.spec }

// Bound reports whether a function is bound to the tool in this table.
func (t *Tool) Bound() bool { return t.binding != nil }

// Schema returns the provider-facing schema
// {"name":..,"description":..,"parameters":{JSON Schema}}. It is computed once;
// callers must not modify the returned bytes.
func (t *Tool) Schema() json.RawMessage { return t.rendered().schema }

// OutputSchema returns the JSON Schema of the tool's result (its manifest's
// returns), or nil when the manifest declares none. It is computed once;
// callers must not modify the returned bytes.
func (t *Tool) OutputSchema() json.RawMessage { return t.rendered().output }

// ErrNotBound is returned by Tool.Call for a tool whose table holds its
// contract but not its function.
var ErrNotBound = errors.New("toolreg: no function is bound to this tool in this table")

// Call is the direct invocation of a tool. It refuses a side-effecting tool with
// *SideEffectToolError before looking at args, and never invokes its function.
// It refuses a withdrawn remote tool with *ToolWithdrawnError (see
// Withdrawn). For a read-only tool it validates and decodes args (a *ToolArgumentError when
// they break the contract; the function is then not invoked), calls the
// function, and returns its result. A panic in the function comes back as a
// *ToolPanicError.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (any, error) {
	if t.spec.SideEffect {
		return nil, &SideEffectToolError{Name: t.spec.Name}
	}
	if err := t.Withdrawn(); err != nil {
		return nil, err
	}
	if t.binding == nil {
		return nil, t.notBound()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return t.invoke(ctx, args)
}

func (t *Tool) invoke(ctx context.Context, args json.RawMessage) (res any, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, &ToolPanicError{Tool: t.spec.Name, Value: v, Stack: debug.Stack()}
		}
	}()
	return t.binding.Call(ctx, args)
}

// Unwrap returns the bound function value itself, bypassing the side-effect
// guard of Call; nil when no function is bound.
//
// The effector's ToolRunner (package effector) is its only sanctioned caller:
// running a side-effecting function anywhere else runs it where a retry repeats
// it. Unwrap exists so that this one bypass is a named, greppable call.
func (t *Tool) Unwrap() any {
	if t.binding == nil {
		return nil
	}
	return t.binding.Func
}

// DecodeArgs validates args against the tool's contract and decodes them into
// the bound function's argument value. It invokes nothing; it is how the
// effector's ToolRunner prepares a call of the function Unwrap returns.
func (t *Tool) DecodeArgs(args json.RawMessage) (any, error) {
	if t.binding == nil {
		return nil, t.notBound()
	}
	return t.binding.Decode(args)
}

// notBound is ErrNotBound for t, saying how to bind it: a read-only tool's
// function belongs in the pipeline's table, a side-effecting one's in the
// effector's.
func (t *Tool) notBound() error {
	how := "bind it with bindings.ReadOnly and call it through bindings.Bound.Pipeline"
	if t.spec.SideEffect {
		how = "bind it with bindings.Effect and run it through bindings.Bound.Effector"
	}
	return fmt.Errorf("%w: %q: %s", ErrNotBound, t.spec.Name, how)
}
