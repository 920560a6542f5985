package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/canonjson"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/runner"
)

// Call is one tool call a model made, in no provider's form.
type Call struct {
	// ID is the provider's id for the call, which its answer quotes.
	ID string
	// Name is the tool the model called.
	Name string
	// Args are the arguments as the model sent them: JSON text, which may be
	// malformed. Empty means {}.
	Args json.RawMessage
	// Type is the kind of call when it is not a function call (OpenAI's
	// "custom"); "" for a function call. Such a call is refused.
	Type string
}

// Status says what became of a call.
type Status int

const (
	// Ran: a read-only tool ran inline and returned; Outcome.Result holds its value.
	Ran Status = iota + 1
	// Staged: a side-effecting call was staged; Outcome.Intent holds its intent.
	Staged
	// Refused: nothing ran and nothing was staged; Outcome.Err says why and the
	// message tells the model what to fix.
	Refused
	// Failed: a read-only tool ran and returned an error (or panicked).
	Failed
)

func (s Status) String() string {
	switch s {
	case Ran:
		return "ran"
	case Staged:
		return "staged"
	case Refused:
		return "refused"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Outcome is what became of one call, and what the model is told.
type Outcome struct {
	Call   Call
	Status Status
	Result any            // Ran: the function's result
	Intent *intent.Intent // Staged: the staged intent; do not modify it
	Err    error          // Refused, Failed: why
	// Text is the answer the model receives for the call.
	Text string
	// IsError is true for Refused and Failed: the provider's error flag, where
	// it has one.
	IsError bool
}

// Dispatch carries calls, in the model's order, through act: read-only calls
// run concurrently with act.RunAll, side-effecting ones are staged with
// act.ActContext in call order, each intent carrying its call's ID, and each
// call gets an Outcome, in call order. See the package documentation for what
// is refused, per call or (with a *ResponseError) whole.
//
// The error is not nil only when the calls cannot be answered: a
// *ResponseError (nothing run, nothing staged), ctx's error, or an error of
// Act that is not about the call (runner.ErrNoClock, runner.ErrDrained, ...).
// The activation must then not be drained.
func Dispatch(ctx context.Context, act *runner.Activation, calls []Call) ([]Outcome, error) {
	return dispatch(ctx, "dispatch", act, calls)
}

// errNilActivation is returned for a nil *runner.Activation.
var errNilActivation = errors.New("dispatch: nil *runner.Activation: make one with runner.NewActivation for the step the response belongs to")

func dispatch(ctx context.Context, from string, act *runner.Activation, calls []Call) ([]Outcome, error) {
	if act == nil {
		return nil, errNilActivation
	}
	if err := checkIDs(from, calls); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]Outcome, len(calls))
	tools := make([]*toolreg.Tool, len(calls))
	var inline []runner.Call
	var inlineAt []int
	for i, c := range calls {
		out[i].Call = c
		if c.Type != "" {
			out[i].refuse(&UnsupportedCallError{CallID: c.ID, Type: c.Type, Name: c.Name})
			continue
		}
		t, err := act.Tool(c.Name)
		if err != nil {
			out[i].refuse(err)
			continue
		}
		tools[i] = t
		if !t.SideEffect() {
			inline = append(inline, runner.Call{Tool: t, Args: c.Args, ID: c.ID})
			inlineAt = append(inlineAt, i)
		}
	}
	for k, o := range act.RunAll(ctx, inline) {
		out[inlineAt[k]].ran(o.Result, o.Err)
	}
	// An ended ctx fails the whole dispatch: a call it stopped has no answer
	// the model could use, and staging after it would stage half a response.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	staged := map[string]*Outcome{} // tool and canonical args -> the call that staged them
	for i, c := range calls {
		t := tools[i]
		if t == nil || !t.SideEffect() {
			continue
		}
		canonical, err := t.CheckArgs(c.Args)
		if err != nil {
			out[i].refuse(err)
			continue
		}
		key := t.Name() + "\x00" + string(canonical)
		if first, ok := staged[key]; ok {
			out[i].refuse(&RepeatedEffectError{Tool: t.Name(), CallID: c.ID, FirstCallID: first.Call.ID, IntentID: first.Intent.ID})
			continue
		}
		in, err := act.ActContext(runner.WithCallID(ctx, c.ID), c.Name, c.Args)
		if err != nil {
			if modelsToFix(err) {
				out[i].refuse(err)
				continue
			}
			return nil, err
		}
		out[i].stage(in)
		staged[key] = &out[i]
	}
	return out, nil
}

// checkIDs refuses calls the provider could not pair with their answers.
func checkIDs(from string, calls []Call) error {
	seen := make(map[string]int, len(calls))
	for i, c := range calls {
		if c.ID == "" {
			return &ResponseError{From: from, Problem: fmt.Sprintf("tool call %d (%q) has no id", i+1, c.Name)}
		}
		if j, ok := seen[c.ID]; ok {
			return &ResponseError{From: from, Problem: fmt.Sprintf("tool calls %d (%q) and %d (%q) share the id %q", j+1, calls[j].Name, i+1, c.Name, c.ID)}
		}
		seen[c.ID] = i
	}
	return nil
}

// modelsToFix reports whether err is about the call itself, so the model can
// be told, rather than about the activation.
func modelsToFix(err error) bool {
	return errors.As(err, new(*toolreg.ToolArgumentError)) ||
		errors.As(err, new(*toolreg.ToolNotFoundError)) ||
		errors.As(err, new(*toolreg.ReadOnlyToolError)) ||
		errors.As(err, new(*toolreg.ScopeError)) ||
		errors.As(err, new(*toolreg.BudgetError)) ||
		errors.As(err, new(*toolreg.ToolWithdrawnError))
}

func (o *Outcome) refuse(err error) {
	o.Status, o.Err, o.IsError = Refused, err, true
	o.Text = refusalText(o.Call, err)
}

func (o *Outcome) ran(res any, err error) {
	if err != nil {
		if modelsToFix(err) || errors.As(err, new(*toolreg.SideEffectToolError)) {
			o.refuse(err)
			return
		}
		o.Status, o.Err, o.IsError = Failed, err, true
		o.Text = failureText(o.Call.Name, err)
		return
	}
	b, err := canonjson.Marshal(res)
	if err != nil {
		o.Status, o.Err, o.IsError = Failed, fmt.Errorf("dispatch: tool %q returned a result that is not JSON: %w", o.Call.Name, err), true
		o.Text = fmt.Sprintf("The call to %s failed: its result could not be encoded.", o.Call.Name)
		return
	}
	o.Status, o.Result, o.Text = Ran, res, string(b)
}

func (o *Outcome) stage(in *intent.Intent) {
	o.Status, o.Intent = Staged, in
	o.Text = fmt.Sprintf("The call to %s was staged as intent %s: it runs once, after this step of the conversation is committed, and its result comes in a later turn. Do not call it again for the same request.", o.Call.Name, in.ID)
}

func refusalText(c Call, err error) string {
	var argErr *toolreg.ToolArgumentError
	var notFound *toolreg.ToolNotFoundError
	var repeated *RepeatedEffectError
	var unsupported *UnsupportedCallError
	var notOffered *toolreg.ToolNotOfferedError
	var scope *toolreg.ScopeError
	var budget *toolreg.BudgetError
	var withdrawn *toolreg.ToolWithdrawnError
	switch {
	case errors.As(err, &withdrawn):
		return withdrawn.ModelMessage()
	case errors.As(err, &argErr):
		return argErr.ModelMessage()
	case errors.As(err, &notOffered):
		return notOffered.ModelMessage()
	case errors.As(err, &scope):
		return scope.ModelMessage()
	case errors.As(err, &budget):
		return budget.ModelMessage()
	case errors.As(err, &notFound):
		var b strings.Builder
		fmt.Fprintf(&b, "The call was not run: there is no tool named %q.", notFound.Name)
		if len(notFound.DidYouMean) > 0 {
			q := make([]string, len(notFound.DidYouMean))
			for i, n := range notFound.DidYouMean {
				q[i] = fmt.Sprintf("%q", n)
			}
			fmt.Fprintf(&b, " Did you mean %s?", strings.Join(q, " or "))
		}
		b.WriteString(" Call one of the tools you were given.")
		return b.String()
	case errors.As(err, &repeated):
		return fmt.Sprintf("The call to %s was not staged: it repeats call %s of the same turn (same tool, same arguments), which was staged once as intent %s. To request the same effect a second time, call the tool again in a later turn.", repeated.Tool, repeated.FirstCallID, repeated.IntentID)
	case errors.As(err, &unsupported):
		return fmt.Sprintf("The call was not run: %s is a %s tool call, and only the function tools you were given can be called.", c.Name, unsupported.Type)
	}
	return fmt.Sprintf("The call to %s was not run: %v", c.Name, err)
}

func failureText(name string, err error) string {
	if errors.As(err, new(*toolreg.ToolPanicError)) {
		// The panic's value is the program's business, not the model's.
		return fmt.Sprintf("The call to %s failed with an internal error.", name)
	}
	return fmt.Sprintf("The call to %s failed: %v", name, err)
}

// ResponseError reports a model response that cannot be answered at all, so
// none of its calls ran or was staged: calls that share an id, a call with no
// id, a response with no message to read. Ask the model again.
type ResponseError struct {
	From    string // the function that refused it, such as "dispatch.OpenAIChat"
	Problem string
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("%s: the model's response cannot be answered: %s; nothing was run or staged: ask the model again", e.From, e.Problem)
}

func (e *ResponseError) Is(target error) bool { return target == toolreg.ErrTool }

// RepeatedEffectError refuses a side-effecting call that repeats one already
// staged from the same response: same tool, same canonical arguments.
type RepeatedEffectError struct {
	Tool        string
	CallID      string
	FirstCallID string
	IntentID    string // the intent the first call staged
}

func (e *RepeatedEffectError) Error() string {
	return fmt.Sprintf("dispatch: call %s repeats call %s of the same response (tool %q, same arguments), staged once as intent %s", e.CallID, e.FirstCallID, e.Tool, e.IntentID)
}

func (e *RepeatedEffectError) Is(target error) bool { return target == toolreg.ErrTool }

// UnsupportedCallError refuses a call that is not a function call, such as
// an OpenAI custom tool call.
type UnsupportedCallError struct {
	CallID string
	Type   string
	Name   string
}

func (e *UnsupportedCallError) Error() string {
	return fmt.Sprintf("dispatch: call %s to %q is a %s tool call: only function calls are dispatched", e.CallID, e.Name, e.Type)
}

func (e *UnsupportedCallError) Is(target error) bool { return target == toolreg.ErrTool }

// UnknownResultError reports a result given to Turn.Resolve for an intent
// the turn did not stage.
type UnknownResultError struct{ IntentID string }

func (e *UnknownResultError) Error() string {
	return fmt.Sprintf("dispatch: no call of this turn staged intent %s: resolve each result with the turn that staged it", e.IntentID)
}

func (e *UnknownResultError) Is(target error) bool { return target == toolreg.ErrTool }

// Turn is a dispatched response: each call's Outcome and the answer to
// append, both in call order. M is the provider's message type.
type Turn[M any] struct {
	Outcomes []Outcome
	// Messages holds one answer per call, in call order; empty when the
	// response had no tool calls.
	Messages []M
	render   func(callID, text string, isError bool) M
}

func newTurn[M any](outs []Outcome, render func(callID, text string, isError bool) M) *Turn[M] {
	t := &Turn[M]{Outcomes: outs, Messages: make([]M, len(outs)), render: render}
	for i, o := range outs {
		t.Messages[i] = render(o.Call.ID, o.Text, o.IsError)
	}
	return t
}

// Resolve returns the turn's messages with the answer of each call whose
// intent has a result among results replaced by that result (see
// ResultText): what the next turn sends once the effector is done. Calls
// without a result keep their answer. Send them in place of Messages, not
// after them: every provider pairs answers with calls by id, and a call is
// answered once. A result for an intent the turn did not stage gives an
// *UnknownResultError.
func (t *Turn[M]) Resolve(results ...*intent.Result) ([]M, error) {
	msgs := append([]M(nil), t.Messages...)
	for _, r := range results {
		found := false
		for i, o := range t.Outcomes {
			if o.Status == Staged && o.Intent.ID == r.IntentID {
				text, isErr := ResultText(r)
				msgs[i] = t.render(o.Call.ID, text, isErr)
				found = true
			}
		}
		if !found {
			return nil, &UnknownResultError{IntentID: r.IntentID}
		}
	}
	return msgs, nil
}

// ResultText renders an intent's result as the answer to the call that
// staged it, and whether it is an error: an OK result's payload, its
// canonical JSON; for the other statuses, what happened, written for the
// model.
func ResultText(r *intent.Result) (text string, isError bool) {
	switch r.Status {
	case intent.StatusOK:
		if len(r.Payload) == 0 {
			return "null", false
		}
		return string(r.Payload), false
	case intent.StatusError:
		return fmt.Sprintf("Intent %s failed: %s. Whether its effect happened is unknown: check before you request it again.", r.IntentID, orNoReason(r.ErrorMessage)), true
	case intent.StatusExpired:
		return fmt.Sprintf("Intent %s expired before it ran: nothing was done. Request it again if it is still wanted.", r.IntentID), true
	case intent.StatusRejected:
		return fmt.Sprintf("Intent %s was refused before it ran: %s. Nothing was done.", r.IntentID, orNoReason(r.ErrorMessage)), true
	}
	return fmt.Sprintf("Intent %s ended with status %s: whether its effect happened is unknown.", r.IntentID, r.Status), true
}

func orNoReason(s string) string {
	if s == "" {
		return "no reason was given"
	}
	return strings.TrimSuffix(s, ".")
}
