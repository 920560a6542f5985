package effector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"

	"github.com/beam-agents/toolreg"
)

// ToolRunner is the effector's runner (beam-agents' EffectorToolRunner): the
// one path that runs a side-effecting tool's function. It is the disjoint twin
// of runner.Runner: that one refuses side-effecting tools, this one refuses
// read-only ones, so "side effects only via intents" stays a closed statement.
// A ToolRunner holds no state and is safe for concurrent use.
type ToolRunner struct{}

// NewToolRunner returns the effector's ToolRunner.
func NewToolRunner() *ToolRunner { return &ToolRunner{} }

var (
	errNilTool = errors.New("effector: nil *toolreg.Tool: resolve the tool in the effector's table and check the error")
	ctxType    = reflect.TypeFor[context.Context]()
	errType    = reflect.TypeFor[error]()
)

// Run runs the side-effecting tool t with the JSON arguments args and returns
// the function's result value.
//
// A read-only t is refused with *toolreg.ReadOnlyToolError before args are
// looked at, and its function is never invoked: it belongs to the inline path.
// Otherwise args are validated and decoded exactly as the inline runner does
// (Tool.DecodeArgs; bad args give a *toolreg.ToolArgumentError and no call),
// and the function, reached through Tool.Unwrap, is called with them. It is not
// invoked when ctx is already done. A panic in the function comes back as a
// *toolreg.ToolPanicError naming the tool. A result that breaks the
// manifest's returns comes back as a *toolreg.ToolResultError, with a nil
// result: the function ran.
func (r *ToolRunner) Run(ctx context.Context, t *toolreg.Tool, args json.RawMessage) (any, error) {
	if t == nil {
		return nil, errNilTool
	}
	if !t.SideEffect() {
		return nil, &toolreg.ReadOnlyToolError{Name: t.Name()}
	}
	a, err := t.DecodeArgs(args) // toolreg.ErrNotBound when no function is bound
	if err != nil {
		return nil, err
	}
	res, err := r.runDecoded(ctx, t, a)
	if err != nil {
		return nil, err
	}
	if err := t.CheckResult(res); err != nil {
		return nil, err
	}
	return res, nil
}

// checkShape refuses a function that is not func(context.Context, A) (R, error)
// for the decoded A. Package bindings only builds such functions; a
// hand-made toolbind.Binding (this module's tests make some) might not,
// and reflect would panic.
func checkShape(name string, ft reflect.Type, av reflect.Value) error {
	if ft.Kind() == reflect.Func && ft.NumIn() == 2 && ft.NumOut() == 2 &&
		ft.In(0) == ctxType && av.IsValid() && av.Type().AssignableTo(ft.In(1)) && ft.Out(1) == errType {
		return nil
	}
	got := "nothing"
	if av.IsValid() {
		got = av.Type().String()
	}
	return fmt.Errorf("effector: tool %q: bound function %s does not take the decoded %s as func(context.Context, A) (R, error): bind it with bindings.Effect", name, ft, got)
}

func call(ctx context.Context, name string, fv, av reflect.Value) (res any, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, &toolreg.ToolPanicError{Tool: name, Value: v, Stack: debug.Stack()}
		}
	}()
	out := fv.Call([]reflect.Value{reflect.ValueOf(&ctx).Elem(), av})
	if e := out[1].Interface(); e != nil {
		return nil, e.(error)
	}
	return out[0].Interface(), nil
}
