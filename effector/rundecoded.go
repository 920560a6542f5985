package effector

import (
	"context"
	"fmt"
	"reflect"

	"github.com/beam-agents/toolreg"
)

// runDecoded is ToolRunner.Run after decoding: the effector calls it with
// arguments it has already validated and decoded with t.DecodeArgs (phase 4,
// where a failure must be REJECTED and not ERROR), so they are not decoded a
// second time; Run calls it after decoding them itself.
func (r *ToolRunner) runDecoded(ctx context.Context, t *toolreg.Tool, a any) (any, error) {
	if !t.SideEffect() {
		return nil, &toolreg.ReadOnlyToolError{Name: t.Name()}
	}
	// The one sanctioned bypass of Tool.Call's side-effect guard.
	fn := t.Unwrap()
	if fn == nil {
		return nil, fmt.Errorf("%w: %q: bind it with bindings.Effect and run it through bindings.Bound.Effector", toolreg.ErrNotBound, t.Name())
	}
	fv := reflect.ValueOf(fn)
	av := reflect.ValueOf(a)
	if err := checkShape(t.Name(), fv.Type(), av); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return call(ctx, t.Name(), fv, av)
}
