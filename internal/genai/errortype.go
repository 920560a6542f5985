package genai

import (
	"context"
	"errors"

	"github.com/beam-agents/toolreg"
)

// The error.type values of toolreg's execute_tool spans, and of the
// attributes its metrics classify failures by: one low-cardinality set,
// shared by runner and effector, so that the same failure has the same name
// wherever it happens (the GenAI conventions ask instrumentations to
// document the errors they report). Each names a kind of failure, never a
// Go type. ErrorTypes lists them all; the README's Telemetry section says
// where each is set.
const (
	// Nothing ran: the call or intent was refused before its function.
	ErrorArgumentRefused   = "argument_refused"    // the arguments break the manifest's params (*toolreg.ToolArgumentError)
	ErrorArgumentsTooLarge = "arguments_too_large" // the arguments exceed the size limit (*toolreg.ArgumentsTooLargeError)
	ErrorSideEffectRefused = "side_effect_refused" // a side-effecting tool asked to run inline (*toolreg.SideEffectToolError)
	ErrorNotBound          = "not_bound"           // the table holds no function for the tool (toolreg.ErrNotBound)
	ErrorScopeRefused      = "scope_refused"       // the caller's principal lacks a scope of the tool (*toolreg.ScopeError)
	ErrorBudgetRefused     = "budget_refused"      // a budget of the tool is used up (*toolreg.BudgetError)
	ErrorRejected          = "rejected"            // effector: a REJECTED result; its error_message says why
	ErrorExpired           = "expired"             // effector: the intent expired before it ran
	ErrorMalformedIntent   = "malformed_intent"    // effector: no usable intent id; dead-lettered
	ErrorSignature         = "signature"           // effector: unsigned, unknown key or bad signature; dead-lettered
	ErrorIntentID          = "intent_id"           // effector: the id is not its position's; dead-lettered
	ErrorNonDeterministic  = "non_deterministic"   // effector: the id was recorded for another call (a replay that asks for something else)

	// The function ran, or may have.
	ErrorTool          = "tool_error"     // it returned an error; for the effector, any ERROR result not named below
	ErrorToolPanic     = "tool_panic"     // it panicked (*toolreg.ToolPanicError)
	ErrorTimeout       = "timeout"        // its deadline or the tool's timeout passed first (context.DeadlineExceeded)
	ErrorCanceled      = "canceled"       // the caller's context was canceled (context.Canceled)
	ErrorResultRefused = "result_refused" // its result breaks the manifest's returns (*toolreg.ToolResultError), or is not JSON
	ErrorDetached      = "detached"       // effector: the caller left while it ran on; its result is recorded later
	ErrorUnrecorded    = "unrecorded"     // effector: the store could not record its result in time

	// Neither: the effector could not tell.
	ErrorStore = "store"  // effector: the dedup store failed
	ErrorOther = "_OTHER" // anything else (the conventions' fallback)
)

// ErrorTypes is every error.type value, in the order above.
var ErrorTypes = []string{
	ErrorArgumentRefused, ErrorArgumentsTooLarge, ErrorSideEffectRefused, ErrorNotBound, ErrorScopeRefused, ErrorBudgetRefused, ErrorRejected,
	ErrorExpired, ErrorMalformedIntent, ErrorSignature, ErrorIntentID, ErrorNonDeterministic,
	ErrorTool, ErrorToolPanic, ErrorTimeout, ErrorCanceled, ErrorResultRefused, ErrorDetached, ErrorUnrecorded,
	ErrorStore, ErrorOther,
}

// ErrorTypeOf is the error.type of err among the kinds both runner and
// effector meet: toolreg's error types and the context's errors. It returns
// "" for any other error (a function's own), which the caller names:
// ErrorTool where the function returned it.
func ErrorTypeOf(err error) string {
	var (
		argErr   *toolreg.ToolArgumentError
		sizeErr  *toolreg.ArgumentsTooLargeError
		sideErr  *toolreg.SideEffectToolError
		panicErr *toolreg.ToolPanicError
		resErr   *toolreg.ToolResultError
		scopeErr *toolreg.ScopeError
		budgErr  *toolreg.BudgetError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &scopeErr):
		return ErrorScopeRefused
	case errors.As(err, &budgErr):
		return ErrorBudgetRefused
	case errors.As(err, &argErr):
		return ErrorArgumentRefused
	case errors.As(err, &sizeErr):
		return ErrorArgumentsTooLarge
	case errors.As(err, &sideErr):
		return ErrorSideEffectRefused
	case errors.Is(err, toolreg.ErrNotBound):
		return ErrorNotBound
	case errors.As(err, &panicErr):
		return ErrorToolPanic
	case errors.As(err, &resErr):
		return ErrorResultRefused
	case errors.Is(err, context.DeadlineExceeded):
		return ErrorTimeout
	case errors.Is(err, context.Canceled):
		return ErrorCanceled
	}
	return ""
}
