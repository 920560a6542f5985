package runner

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/genai"
)

// Runner runs read-only tools inline. It holds no tools: pass it the *Tool
// a registry resolves. A Runner is safe for concurrent use.
type Runner struct {
	maxConcurrent int
	maxArgs       int
	skipResults   bool

	tp         trace.TracerProvider // telemetry.go
	tr         trace.Tracer
	recordArgs bool
}

// Option configures a Runner.
type Option func(*Runner)

// WithMaxConcurrency limits how many calls RunAll runs at once to n. The
// default, and any n <= 0, is no limit: every call of a RunAll starts at once,
// as asyncio.gather would start a model's parallel tool calls.
func WithMaxConcurrency(n int) Option {
	return func(r *Runner) { r.maxConcurrent = max(n, 0) }
}

// WithMaxArgsBytes sets the largest arguments, in bytes of JSON, that Run,
// RunAll, and the Act and RunTool of an Activation using this Runner accept;
// larger ones are refused with a *toolreg.ArgumentsTooLargeError before they
// are checked. The default, and any n <= 0, is toolreg.DefaultMaxArgsBytes
// (1 MiB).
func WithMaxArgsBytes(n int) Option {
	return func(r *Runner) { r.maxArgs = n }
}

// WithoutResultValidation turns off the check of each result against its
// manifest's returns. UNSAFE: a function whose result drifts from its
// contract then hands the model, and every caller, a value the manifest says
// it cannot return. Use it only to measure the check's cost, or for a tool
// set whose results are checked elsewhere. Validation is on by default.
func WithoutResultValidation() Option {
	return func(r *Runner) { r.skipResults = true }
}

// New returns a Runner.
func New(opts ...Option) *Runner {
	r := &Runner{}
	for _, o := range opts {
		o(r)
	}
	r.tr = genai.Tracer(r.tp)
	return r
}

// errNilTool is returned for a nil *Tool, which a registry lookup that
// ignored its error would pass.
var errNilTool = errors.New("runner: nil *toolreg.Tool: resolve the tool with registry.Get and check its error")

// Run runs the read-only tool t with the JSON arguments args and returns the
// function's result value.
//
// A tool whose manifest declares scopes the principal of ctx lacks
// (toolreg.WithPrincipal; none is the anonymous caller, who holds no scope)
// is refused first, with a *toolreg.ScopeError whose ModelMessage names the
// missing scopes. A side-effecting t is refused with *toolreg.SideEffectToolError before args
// are looked at, and its function is never invoked: request it with an
// Activation's Act instead. Bad args give a *toolreg.ToolArgumentError and the
// function is not invoked; so do arguments above the size limit
// (*toolreg.ArgumentsTooLargeError, see WithMaxArgsBytes), before they are
// checked. Nor is it invoked when ctx is already done (ctx's
// error is returned). A panic in the function comes back as a
// *toolreg.ToolPanicError naming the tool. An error the function returns is
// returned as is, with a nil result. A result that breaks the manifest's
// returns is not handed on: Run returns a *toolreg.ToolResultError naming
// each failing path, with a nil result (see WithoutResultValidation).
func (r *Runner) Run(ctx context.Context, t *toolreg.Tool, args json.RawMessage) (any, error) {
	return r.runIn(ctx, t, args, trace.SpanContext{}, false)
}

// runIn is Run for a run whose span joins the trace of parent, a remote
// span, when it is valid and ctx holds no span of that trace: an
// Activation's with WithTraceID. scoped says the caller checked t's scopes
// against the principal of ctx already.
func (r *Runner) runIn(ctx context.Context, t *toolreg.Tool, args json.RawMessage, parent trace.SpanContext, scoped bool) (any, error) {
	if t == nil {
		return nil, errNilTool
	}
	if tr := r.tracer(); tr != nil {
		return r.runTraced(ctx, tr, t, args, parent, scoped)
	}
	return r.run(ctx, t, args, scoped)
}

// run is Run inside its span.
func (r *Runner) run(ctx context.Context, t *toolreg.Tool, args json.RawMessage, scoped bool) (any, error) {
	if !scoped && len(t.Spec().Scopes) > 0 {
		if err := scopeErr(ctx, t); err != nil {
			return nil, err
		}
	}
	// Tool.Call holds the side-effect guard, before it looks at args.
	if err := r.checkSize(t, args); err != nil && !t.SideEffect() {
		return nil, err
	}
	res, err := t.Call(ctx, args)
	if err != nil || r.skipResults {
		return res, err
	}
	if err := t.CheckResult(res); err != nil {
		return nil, err
	}
	return res, nil
}

// checkSize refuses args above the size limit.
func (r *Runner) checkSize(t *toolreg.Tool, args json.RawMessage) error {
	limit := r.maxArgs
	if limit <= 0 {
		limit = toolreg.DefaultMaxArgsBytes // a zero Runner
	}
	if len(args) > limit {
		return &toolreg.ArgumentsTooLargeError{Tool: t.Name(), Size: len(args), Limit: limit}
	}
	return nil
}

// Call is one tool call for RunAll.
type Call struct {
	Tool *toolreg.Tool
	Args json.RawMessage
	// ID is the model's id for the call, recorded on its span as
	// gen_ai.tool.call.id (as WithCallID does for Run); "" for none.
	ID string
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
	return r.runAll(ctx, calls, trace.SpanContext{})
}

// runAll is RunAll, each run as runIn with parent.
func (r *Runner) runAll(ctx context.Context, calls []Call, parent trace.SpanContext) []Outcome {
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
			cctx := ctx
			if c.ID != "" {
				cctx = WithCallID(ctx, c.ID)
			}
			res, err := r.runIn(cctx, c.Tool, c.Args, parent, false)
			out[i] = Outcome{Result: res, Err: err}
		})
	}
	wg.Wait()
	return out
}
