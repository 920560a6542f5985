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
// tools offers them, a call over its tool's per_activation budget (counted
// in call order) is refused with *toolreg.BudgetError, the calls run with
// the activation's principal unless ctx carries one, and it stages nothing
// and does not advance the step cursor.
func (a *Activation) RunAll(ctx context.Context, calls []Call) []Outcome {
	ctx = a.withPrincipal(ctx)
	if a.offered == nil && !budgeted(calls) {
		return a.runner.runAll(ctx, calls, a.spanParent)
	}
	out := make([]Outcome, len(calls))
	var run []Call
	var at []int
	for i, c := range calls {
		if c.Tool == nil { // the runner refuses it
			run = append(run, c)
			at = append(at, i)
			continue
		}
		if err := a.offeredErr(c.Tool.Name()); err != nil {
			out[i].Err = err
			continue
		}
		if limit := perActivation(c.Tool); limit > 0 {
			// In call order: the first calls within the budget run.
			if err := scopeErr(ctx, c.Tool); err != nil {
				out[i].Err = err
				continue
			}
			if err := a.take(c.Tool, limit); err != nil {
				out[i].Err = err
				continue
			}
		}
		run = append(run, c)
		at = append(at, i)
	}
	for k, o := range a.runner.runAll(ctx, run, a.spanParent) {
		out[at[k]] = o
		if o.Err == nil {
			a.offerFound(o.Result)
		} else if run[k].Tool != nil && perActivation(run[k].Tool) > 0 {
			a.giveBack(run[k].Tool, o.Err)
		}
	}
	return out
}

// budgeted reports whether a call of calls has a per-activation budget.
func budgeted(calls []Call) bool {
	for _, c := range calls {
		if c.Tool != nil && perActivation(c.Tool) > 0 {
			return true
		}
	}
	return false
}
