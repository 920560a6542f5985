package runner

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/beam-agents/toolreg"
)

// Runner runs read-only tools inline. It holds no tools: pass it the *Tool
// a registry resolves. A Runner is safe for concurrent use.
type Runner struct {
	maxConcurrent int
}

// Option configures a Runner.
type Option func(*Runner)

// WithMaxConcurrency limits how many calls RunAll runs at once to n. The
// default, and any n <= 0, is no limit: every call of a RunAll starts at once,
// as asyncio.gather would start a model's parallel tool calls.
func WithMaxConcurrency(n int) Option {
	return func(r *Runner) { r.maxConcurrent = max(n, 0) }
}

// New returns a Runner.
func New(opts ...Option) *Runner {
	r := &Runner{}
	for _, o := range opts {
		o(r)
	}
	return r
}

// errNilTool is returned for a nil *Tool, which a registry lookup that
// ignored its error would pass.
var errNilTool = errors.New("runner: nil *toolreg.Tool: resolve the tool with registry.Get and check its error")

// Run runs the read-only tool t with the JSON arguments args and returns the
// function's result value.
//
// A side-effecting t is refused with *toolreg.SideEffectToolError before args
// are looked at, and its function is never invoked: request it with an
// Activation's Act instead. Bad args give a *toolreg.ToolArgumentError and the
// function is not invoked; neither is it when ctx is already done (ctx's
// error is returned). A panic in the function comes back as a
// *toolreg.ToolPanicError naming the tool. An error the function returns is
// returned as is, with a nil result.
func (r *Runner) Run(ctx context.Context, t *toolreg.Tool, args json.RawMessage) (any, error) {
	if t == nil {
		return nil, errNilTool
	}
	// Tool.Call holds the side-effect guard, before it looks at args.
	return t.Call(ctx, args)
}

// Call is one tool call for RunAll.
type Call struct {
	Tool *toolreg.Tool
	Args json.RawMessage
}

// Outcome is what one call of RunAll gave: Run's result and error.
type Outcome struct {
	Result any
	Err    error
}

// RunAll runs calls concurrently, each as Run would, and returns their
// outcomes in call order. At most the WithMaxConcurrency limit run at once; a
// call still waiting for its turn when ctx ends is not invoked and gets ctx's
// error. One call's failure does not stop the others.
func (r *Runner) RunAll(ctx context.Context, calls []Call) []Outcome {
	out := make([]Outcome, len(calls))
	var sem chan struct{}
	if r.maxConcurrent > 0 && r.maxConcurrent < len(calls) {
		sem = make(chan struct{}, r.maxConcurrent)
	}
	var wg sync.WaitGroup
	for i, c := range calls {
		if sem != nil {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				out[i] = Outcome{Err: ctx.Err()}
				continue
			}
		}
		wg.Go(func() {
			if sem != nil {
				defer func() { <-sem }()
			}
			res, err := r.Run(ctx, c.Tool, c.Args)
			out[i] = Outcome{Result: res, Err: err}
		})
	}
	wg.Wait()
	return out
}
