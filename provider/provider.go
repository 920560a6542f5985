package provider

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/beam-agents/toolreg"
)

// The form names Render accepts.
const (
	OpenAI                = "openai"
	OpenAIResponses       = "openai-responses"
	OpenAIStrict          = "openai-strict"
	OpenAIStrictResponses = "openai-strict-responses"
	Anthropic             = "anthropic"
	AnthropicStrict       = "anthropic-strict"
	Gemini                = "gemini"
	GeminiJSONSchema      = "gemini-jsonschema"
	MCP                   = "mcp"
)

var forms = []string{OpenAI, OpenAIResponses, OpenAIStrict, OpenAIStrictResponses, Anthropic, AnthropicStrict, Gemini, GeminiJSONSchema, MCP}

// Forms returns every form name, in a fixed order.
func Forms() []string { return slices.Clone(forms) }

// Known reports whether name is a form Render accepts.
func Known(name string) bool { return slices.Contains(forms, name) }

// Action says what a form did with a keyword the manifest declares.
type Action int

const (
	// Moved: the keyword left the schema and its text went into the description,
	// so the model still reads it but the provider no longer enforces it.
	Moved Action = iota + 1
	// Dropped: the keyword left the schema with no trace for the model.
	Dropped
	// Rewritten: the keyword was expressed another way that means the same to
	// toolreg (an optional param made nullable, for instance).
	Rewritten
	// NotEnforced: the keyword stays in the schema, but the provider does not
	// hold the model's arguments to it (a form without strict mode), or
	// ignores it (Gemini's default). toolreg still checks it on every call.
	NotEnforced
)

func (a Action) String() string {
	switch a {
	case Moved:
		return "moved into the description"
	case Dropped:
		return "dropped"
	case Rewritten:
		return "rewritten"
	case NotEnforced:
		return "kept, not enforced by the provider"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Note is one change a form made to a tool's contract.
type Note struct {
	Form string
	Tool string
	Pos  toolreg.Pos // the param's manifest position, else the tool's
	// Path is the manifest path of the schema the keyword belongs to, such as
	// "params.name" or "params.tags.items".
	Path    string
	Keyword string
	Action  Action
	// Detail says what happened, such as "minLength: 3 moved into the description".
	Detail string
}

func (n Note) String() string {
	return fmt.Sprintf("%s: %s: %s: %s: %s", n.Pos, n.Form, n.Tool, n.Path, n.Detail)
}

// UnsupportedError reports a tool a form cannot express, with every reason.
type UnsupportedError struct {
	Form     string
	Tool     string
	Problems []toolreg.Problem
}

func (e *UnsupportedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "provider: %s cannot express tool %q", e.Form, e.Tool)
	for i, p := range e.Problems {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		if p.Path != "" {
			b.WriteString(p.Path)
			b.WriteString(": ")
		}
		b.WriteString(p.Message)
	}
	return b.String()
}

// Is makes errors.Is(err, toolreg.ErrTool) hold, like every toolreg error.
func (e *UnsupportedError) Is(target error) bool { return target == toolreg.ErrTool }

// UnknownFormError reports a form name Render does not know.
type UnknownFormError struct{ Name string }

func (e *UnknownFormError) Error() string {
	return fmt.Sprintf("provider: unknown form %q: use one of %s", e.Name, strings.Join(forms, ", "))
}

func (e *UnknownFormError) Is(target error) bool { return target == toolreg.ErrTool }

// Rendered is one tool in one form.
type Rendered struct {
	Form string
	Tool string
	// JSON is the tool as the provider's API takes it, keys in a fixed order.
	JSON json.RawMessage
	// Notes list what the form moved, dropped or rewrote, in schema order.
	Notes []Note
}

// Render renders spec in the named form. It returns an *UnknownFormError for a
// name Forms does not list and an *UnsupportedError, listing every reason, for
// a tool the form cannot express.
func Render(form string, spec *toolreg.Spec) (*Rendered, error) {
	rules, ok := rulesFor(form)
	if !ok {
		return nil, &UnknownFormError{Name: form}
	}
	w := &walker{rules: rules, spec: spec, b: make([]byte, 0, 512)}
	w.tool()
	if len(w.problems) > 0 {
		return nil, &UnsupportedError{Form: form, Tool: spec.Name, Problems: w.problems}
	}
	return &Rendered{Form: form, Tool: spec.Name, JSON: w.b, Notes: w.notes}, nil
}

// Set is a list of tools rendered in one form: what a tools list sends.
type Set struct {
	Form string
	// Tools holds each tool that could be rendered, in the order given.
	Tools []json.RawMessage
	// Notes gathers every tool's Notes, in the order given.
	Notes []Note
	// Findings are Vet's findings for the same tools and form.
	Findings []Finding
}

// RenderAll renders every spec in the named form and vets them. The Set is
// returned even when some tools cannot be rendered, so a caller can report on
// them; the error then joins one *UnsupportedError per such tool (use
// errors.As). An unknown form gives a nil Set and an *UnknownFormError.
func RenderAll(form string, specs []*toolreg.Spec) (*Set, error) {
	if !Known(form) {
		return nil, &UnknownFormError{Name: form}
	}
	set := &Set{Form: form, Tools: make([]json.RawMessage, 0, len(specs))}
	var errs []error
	notes := make([][]Note, 0, len(specs))
	n := 0
	for _, s := range specs {
		r, err := Render(form, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		set.Tools = append(set.Tools, r.JSON)
		notes = append(notes, r.Notes)
		n += len(r.Notes)
	}
	// Sized once: a thousand tools carry thousands of notes.
	set.Notes = make([]Note, 0, n)
	for _, ns := range notes {
		set.Notes = append(set.Notes, ns...)
	}
	set.Findings = vet(form, specs, set.Notes, errs)
	return set, joinErrors(errs)
}

// List renders the set's tools as one JSON array, ready to send.
func (s *Set) List() json.RawMessage {
	n := 2
	for _, t := range s.Tools {
		n += len(t) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, t := range s.Tools {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, t...)
	}
	return append(b, ']')
}

// joinErrors returns nil for no errors, the error itself for one, and a
// *MultiError (one error a line, each found by errors.As) for more.
func joinErrors(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return &MultiError{Errs: errs}
}

// MultiError holds one error per tool that could not be rendered.
type MultiError struct{ Errs []error }

func (e *MultiError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "provider: %d tools cannot be rendered:", len(e.Errs))
	for _, err := range e.Errs {
		b.WriteString("\n\t")
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap lets errors.As find each tool's *UnsupportedError.
func (e *MultiError) Unwrap() []error { return e.Errs }
