package runner

import (
	"context"

	"github.com/beam-agents/toolreg"
)

// Tool returns the tool called name in the activation's pipeline table: its
// contract, and its function only if it is read-only. A dispatcher uses it to
// route a model's call (SideEffect) and to compare calls by their canonical
// arguments (CheckArgs). An unknown name gives *toolreg.ToolNotFoundError; a
// name the activation does not offer (WithOffered),
// *toolreg.ToolNotOfferedError.
func (a *Activation) Tool(name string) (*toolreg.Tool, error) {
	if err := a.offeredErr(name); err != nil {
		return nil, err
	}
	return a.pipeline.Get(name)
}

// RunAll runs calls as the activation's Runner's RunAll does: concurrently,
// within its WithMaxConcurrency limit, outcomes in call order, a
// side-effecting tool refused before its arguments are looked at. Like
// RunTool, a call of a tool the activation does not offer is refused with
// *toolreg.ToolNotOfferedError and never runs, a result that lists found
// tools offers them, and it stages nothing and does not advance the step
// cursor.
func (a *Activation) RunAll(ctx context.Context, calls []Call) []Outcome {
	if a.offered == nil {
		return a.runner.runAll(ctx, calls, a.spanParent)
	}
	out := make([]Outcome, len(calls))
	var run []Call
	var at []int
	for i, c := range calls {
		if err := a.offeredErr(c.Tool.Name()); err != nil {
			out[i].Err = err
			continue
		}
		run = append(run, c)
		at = append(at, i)
	}
	for k, o := range a.runner.runAll(ctx, run, a.spanParent) {
		out[at[k]] = o
		if o.Err == nil {
			a.offerFound(o.Result)
		}
	}
	return out
}
