package toolreg

import "fmt"

// ToolNotOfferedError is a call of a tool that the caller was not offered
// for this turn: an activation limited to a subset of its registry (a model
// shown only the tools a search found) refuses every other tool, whether or
// not the registry holds it, before looking at the arguments. Nothing runs
// and nothing is staged.
type ToolNotOfferedError struct {
	Name string
	// Search is the name of an offered tool that finds more tools
	// (search_tools), or "" when none is offered.
	Search string
}

func (e *ToolNotOfferedError) Error() string {
	msg := fmt.Sprintf("toolreg: tool %q was not offered for this turn: the activation refuses tools outside the set it was given (runner.WithOffered)", e.Name)
	if e.Search != "" {
		msg += fmt.Sprintf("; the model can find more with %q", e.Search)
	}
	return msg
}

// ModelMessage renders the refusal for the model that made the call: the
// tool is not available now, and what to do instead.
func (e *ToolNotOfferedError) ModelMessage() string {
	msg := fmt.Sprintf("Tool %q is not available in this turn. Call one of the tools you were given", e.Name)
	if e.Search != "" {
		return msg + fmt.Sprintf(", or call %s to find a tool for the task and its schema.", e.Search)
	}
	return msg + "."
}

func (e *ToolNotOfferedError) Is(target error) bool { return target == ErrTool }
