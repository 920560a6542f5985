package toolreg

import (
	"errors"
	"fmt"
	"strings"
)

// ErrTool is wrapped by every error type of this package, so errors.Is(err,
// ErrTool) tells a tool registry error from any other.
var ErrTool = errors.New("toolreg")

// Problem is one finding about a manifest or a binding.
type Problem struct {
	Pos  Pos    // where in the manifest (or Go source) the problem is
	Tool string // the tool's name, when known
	Path string // the field path inside the tool, such as "params.amount.type"
	// Message says what is wrong and, where it can, what to do.
	Message string
}

// String renders the problem as file:line:col: tool: path: message, leaving out
// the parts that are empty.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.Pos.String())
	b.WriteString(": ")
	if p.Tool != "" {
		b.WriteString(p.Tool)
		b.WriteString(": ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// ToolDefinitionError reports a bad manifest or a binding that disagrees with
// its manifest. It lists every problem found, not only the first.
type ToolDefinitionError struct {
	Problems []Problem
}

func (e *ToolDefinitionError) Error() string {
	switch len(e.Problems) {
	case 0:
		return "toolreg: invalid tool definition"
	case 1:
		return "toolreg: " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "toolreg: %d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n\t")
		b.WriteString(p.String())
	}
	return b.String()
}

func (e *ToolDefinitionError) Is(target error) bool { return target == ErrTool }

// DuplicateToolError reports a tool name declared or registered twice.
type DuplicateToolError struct {
	Name   string
	First  Pos // where the name was first declared; zero when not from a manifest
	Second Pos // where it was declared again
}

func (e *DuplicateToolError) Error() string {
	if e.First.IsValid() || e.Second.IsValid() {
		return fmt.Sprintf("toolreg: %s: tool %q is declared twice; first at %s: rename one or remove it", e.Second, e.Name, e.First)
	}
	return fmt.Sprintf("toolreg: tool %q is already registered: tool names must be unique", e.Name)
}

func (e *DuplicateToolError) Is(target error) bool { return target == ErrTool }

// ToolNotFoundError reports a name no tool is registered under.
type ToolNotFoundError struct {
	Name string
	// DidYouMean holds registered names close to Name, nearest first.
	DidYouMean []string
}

func (e *ToolNotFoundError) Error() string {
	msg := fmt.Sprintf("toolreg: no tool named %q", e.Name)
	switch len(e.DidYouMean) {
	case 0:
	case 1:
		msg += fmt.Sprintf(" (did you mean %q?)", e.DidYouMean[0])
	default:
		q := make([]string, len(e.DidYouMean))
		for i, n := range e.DidYouMean {
			q[i] = fmt.Sprintf("%q", n)
		}
		msg += " (did you mean one of " + strings.Join(q, ", ") + "?)"
	}
	return msg
}

func (e *ToolNotFoundError) Is(target error) bool { return target == ErrTool }

// ArgProblem is one argument that failed its tool's contract.
type ArgProblem struct {
	// Path is a JSON Pointer to the failing value, such as "/limit" or
	// "/items/2"; "" is the arguments object itself.
	Path string
	// Want says what the contract asks for ("integer", "at most 100", ...).
	Want string
	// Got says what came (`"ten"`, "missing", ...).
	Got string
}

func (p ArgProblem) String() string {
	path := p.Path
	if path == "" {
		path = "(arguments)"
	}
	if p.Got == "" {
		return fmt.Sprintf("%s: want %s", path, p.Want)
	}
	return fmt.Sprintf("%s: want %s, got %s", path, p.Want, p.Got)
}

// ToolArgumentError reports arguments that do not satisfy a tool's contract.
// The tool's function was not invoked.
type ToolArgumentError struct {
	Tool     string
	Problems []ArgProblem
}

func (e *ToolArgumentError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "toolreg: %s: invalid arguments", e.Tool)
	for i, p := range e.Problems {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// ModelMessage renders the error for the model that made the call, so an agent
// can send it back as the tool's result and the model can correct its call.
func (e *ToolArgumentError) ModelMessage() string {
	var b strings.Builder
	fmt.Fprintf(&b, "The call to %s was not run: its arguments do not match the tool's parameters.", e.Tool)
	for _, p := range e.Problems {
		b.WriteString("\n- ")
		if p.Path == "" {
			b.WriteString("the arguments")
		} else {
			fmt.Fprintf(&b, "%q", strings.TrimPrefix(p.Path, "/"))
		}
		b.WriteString(": expected ")
		b.WriteString(p.Want)
		if p.Got != "" {
			b.WriteString(", got ")
			b.WriteString(p.Got)
		}
	}
	b.WriteString("\nFix these and call the tool again.")
	return b.String()
}

func (e *ToolArgumentError) Is(target error) bool { return target == ErrTool }

// ResultProblem is one part of a result that broke its tool's returns.
type ResultProblem struct {
	// Path is a JSON Pointer to the failing value, such as "/status" or
	// "/lines/2/qty"; "" is the result itself.
	Path string
	// Want says what the contract asks for; Got says what came.
	Want string
	Got  string
}

func (p ResultProblem) String() string {
	path := p.Path
	if path == "" {
		path = "(result)"
	}
	return fmt.Sprintf("%s: want %s, got %s", path, p.Want, p.Got)
}

// ToolResultError reports a result that does not satisfy its tool's
// returns. The function ran; its result is not handed on as if it were
// valid. For a side-effecting tool the effect happened.
type ToolResultError struct {
	Tool     string
	Problems []ResultProblem
}

func (e *ToolResultError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "toolreg: %s: result breaks the manifest's returns", e.Tool)
	for i, p := range e.Problems {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Is makes a *ToolResultError match ErrTool.
func (e *ToolResultError) Is(target error) bool { return target == ErrTool }

// SideEffectToolError reports an attempt to run a side-effecting tool inline.
// Its function was not invoked: request it with Activation.Act instead, and the
// effector will execute it once.
type SideEffectToolError struct {
	Name string
}

func (e *SideEffectToolError) Error() string {
	return fmt.Sprintf("toolreg: tool %q has side effects and never runs inline: request it with Act so the effector executes it once", e.Name)
}

func (e *SideEffectToolError) Is(target error) bool { return target == ErrTool }

// ReadOnlyToolError reports the effector being asked to run a read-only tool,
// which belongs to the inline path. Its function was not invoked.
type ReadOnlyToolError struct {
	Name string
}

func (e *ReadOnlyToolError) Error() string {
	return fmt.Sprintf("toolreg: tool %q is read-only: the effector runs only side-effecting tools; run it inline with the runner", e.Name)
}

func (e *ReadOnlyToolError) Is(target error) bool { return target == ErrTool }

// ToolPanicError reports a tool function that panicked. The process goes on.
type ToolPanicError struct {
	Tool  string
	Value any    // what the function panicked with
	Stack []byte // the goroutine's stack at the panic
}

func (e *ToolPanicError) Error() string {
	return fmt.Sprintf("toolreg: tool %q panicked: %v", e.Tool, e.Value)
}

func (e *ToolPanicError) Is(target error) bool { return target == ErrTool }

// DefaultMaxArgsBytes is the largest tool arguments, in bytes of JSON, that
// the runner (Run, Act, RunTool) and the effector accept unless configured
// otherwise (runner.WithMaxArgsBytes, effector.WithMaxArgsBytes): 1 MiB. A
// model's tool call is kilobytes; a larger one is a bug or an attack, and
// checking or executing it would cost memory and time first.
const DefaultMaxArgsBytes = 1 << 20

// ArgumentsTooLargeError reports tool arguments above the size limit. They
// were not checked, and no function was invoked.
type ArgumentsTooLargeError struct {
	Tool  string
	Size  int // bytes of JSON
	Limit int
}

func (e *ArgumentsTooLargeError) Error() string {
	return fmt.Sprintf("toolreg: the arguments of tool %q are %d bytes, above the limit of %d: pass a reference to large data (an id, a URL), not the data, or raise the limit (runner.WithMaxArgsBytes, effector.WithMaxArgsBytes)", e.Tool, e.Size, e.Limit)
}

func (e *ArgumentsTooLargeError) Is(target error) bool { return target == ErrTool }
