package runner

import (
	"context"

	"github.com/beam-agents/toolreg"
)

// Tool returns the tool called name in the activation's pipeline table: its
// contract, and its function only if it is read-only. A dispatcher uses it to
// route a model's call (SideEffect) and to compare calls by their canonical
// arguments (CheckArgs). An unknown name gives *toolreg.ToolNotFoundError.
func (a *Activation) Tool(name string) (*toolreg.Tool, error) {
	return a.pipeline.Get(name)
}

// RunAll runs calls as the activation's Runner's RunAll does: concurrently,
// within its WithMaxConcurrency limit, outcomes in call order, a
// side-effecting tool refused before its arguments are looked at. Like
// RunTool it stages nothing and does not advance the step cursor.
func (a *Activation) RunAll(ctx context.Context, calls []Call) []Outcome {
	return a.runner.RunAll(ctx, calls)
}
