package provider

import (
	"errors"
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/beam-agents/toolreg"
)

// Severity ranks a Finding.
type Severity int

const (
	// Info: the form changed the contract in a way that loses nothing the model
	// needs (toolreg still enforces it).
	Info Severity = iota
	// Warning: the provider will take the tool but degrade it: a constraint it
	// no longer enforces, a param the model is told nothing about.
	Warning
	// Error: the provider will refuse the tool, or the list.
	Error
)

func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	case Error:
		return "error"
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

// Finding is one thing a provider would refuse or degrade.
type Finding struct {
	Form     string
	Severity Severity
	Pos      toolreg.Pos
	Tool     string // empty for a finding about the whole list
	Path     string
	Message  string
}

// String renders the finding as file:line:col: severity: form: tool: path: message.
func (f Finding) String() string {
	s := fmt.Sprintf("%s: %s: %s: ", f.Pos, f.Severity, f.Form)
	if f.Tool != "" {
		s += f.Tool + ": "
	}
	if f.Path != "" {
		s += f.Path + ": "
	}
	return s + f.Message
}

// Worst returns the highest severity among fs, and false when fs is empty.
func Worst(fs []Finding) (Severity, bool) {
	if len(fs) == 0 {
		return Info, false
	}
	w := Info
	for _, f := range fs {
		w = max(w, f.Severity)
	}
	return w, true
}

// Limits of the providers.
const (
	// A function's description, in characters: a limit older OpenAI APIs
	// enforced. The current API reference documents none (it gives 64 for the
	// name and no maximum for the description), so a longer one is a warning.
	openAIMaxDescription = 1024
	openAIMaxTools       = 128 // tools in one request

	// Anthropic's strict tool use, per request (Structured outputs, "JSON
	// Schema limitations"): strict tools, and optional params (properties not
	// in required) across every strict tool's schema.
	claudeStrictMaxTools    = 20
	claudeStrictMaxOptional = 24
)

var (
	openAIName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	// Gemini: starts with a letter or underscore; letters, digits, '_', '.',
	// ':' and '-'; at most 64.
	geminiName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$`)
	// MCP (2025-11-25): 1 to 128 of letters, digits, '_', '-' and '.'.
	mcpName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`)
)

// Vet reports what the named form's provider would refuse (Error) or degrade
// (Warning) in specs, and what rendering changed harmlessly (Info): name rules,
// description limits, tools that cannot be rendered (strict mode), keywords
// moved into descriptions, params without a description. It returns an
// *UnknownFormError for an unknown form.
func Vet(form string, specs []*toolreg.Spec) ([]Finding, error) {
	set, err := RenderAll(form, specs)
	if set == nil {
		return nil, err
	}
	return set.Findings, nil
}

func vet(form string, specs []*toolreg.Spec, notes []Note, renderErrs []error) []Finding {
	fs := make([]Finding, 0, len(notes)+len(specs))
	add := func(sev Severity, pos toolreg.Pos, tool, path, format string, args ...any) {
		fs = append(fs, Finding{Form: form, Severity: sev, Pos: pos, Tool: tool, Path: path, Message: fmt.Sprintf(format, args...)})
	}
	isOpenAI := form == OpenAI || form == OpenAIResponses || form == OpenAIStrict || form == OpenAIStrictResponses
	if isOpenAI && len(specs) > openAIMaxTools {
		add(Error, toolreg.Pos{}, "", "", "%d tools: OpenAI takes at most %d in one request; send a subset", len(specs), openAIMaxTools)
	}
	if form == AnthropicStrict {
		if len(specs) > claudeStrictMaxTools {
			add(Error, toolreg.Pos{}, "", "", "%d strict tools: Anthropic takes at most %d in one request; send a subset, or send the others with the plain anthropic form", len(specs), claudeStrictMaxTools)
		}
		n := 0
		for _, s := range specs {
			n += optionalParams(s.Params)
		}
		if n > claudeStrictMaxOptional {
			add(Error, toolreg.Pos{}, "", "", "%d optional params in all: Anthropic's strict tool use takes at most %d in one request; make some required, or send fewer tools strict", n, claudeStrictMaxOptional)
		}
	}
	// Each tool's findings together, in the order given.
	probs := make(map[string][]toolreg.Problem)
	for _, err := range renderErrs {
		var ue *UnsupportedError
		if errors.As(err, &ue) {
			probs[ue.Tool] = append(probs[ue.Tool], ue.Problems...)
		}
	}
	next := 0 // notes come in the order of specs: each tool's run is next
	for _, s := range specs {
		var re *regexp.Regexp
		rule := ""
		switch form {
		case Gemini, GeminiJSONSchema:
			re, rule = geminiName, "start with a letter or '_', then letters, digits, '_', '.', ':' or '-', at most 64"
		case MCP:
			re, rule = mcpName, "1 to 128 letters, digits, '_', '-' or '.'"
		default:
			re, rule = openAIName, "1 to 64 letters, digits, '_' or '-'"
		}
		if !re.MatchString(s.Name) {
			add(Error, s.Pos, s.Name, "name", "%s refuses the name %q: use %s", form, s.Name, rule)
		}
		switch {
		case s.Description == "":
			add(Warning, s.Pos, s.Name, "description", "no description: the model chooses tools by it; say what the tool does and when to use it")
		case isOpenAI && utf8.RuneCountInString(s.Description) > openAIMaxDescription:
			add(Warning, s.Pos, s.Name, "description", "description is %d characters: OpenAI documents no limit, but has refused more than %d and may truncate it; shorten it", utf8.RuneCountInString(s.Description), openAIMaxDescription)
		}
		if form == MCP && s.Annotations != nil && !s.SideEffect && s.Annotations.DestructiveHint != nil && *s.Annotations.DestructiveHint {
			add(Warning, s.Pos, s.Name, "annotations.destructiveHint", "a read-only tool (side_effect: false) marked destructive: MCP clients ignore destructiveHint when readOnlyHint is true; fix one of them")
		}
		for _, p := range probs[s.Name] {
			add(Error, p.Pos, p.Tool, p.Path, "%s", p.Message)
		}
		vetParams(s, s.Params, "params", add)
		for ; next < len(notes) && notes[next].Tool == s.Name; next++ {
			n := notes[next]
			sev := Warning
			if n.Action != Moved {
				sev = Info
			}
			fs = append(fs, Finding{Form: form, Severity: sev, Pos: n.Pos, Tool: n.Tool, Path: n.Path, Message: n.Detail})
		}
		// A name given twice would report its problems twice; report them once.
		delete(probs, s.Name)
	}
	return fs
}

// vetParams warns of params, at any depth, that tell the model nothing.
func vetParams(s *toolreg.Spec, ps []*toolreg.Param, path string, add func(Severity, toolreg.Pos, string, string, string, ...any)) {
	for _, p := range ps {
		pp := path + "." + p.Name
		pos := p.Pos
		if !pos.IsValid() {
			pos = s.Pos
		}
		if p.Description == "" {
			add(Warning, pos, s.Name, pp, "param has no description: the model guesses what to send; describe it")
		}
		vetSchema(s, &p.Schema, pp, pos, add)
	}
}

func vetSchema(s *toolreg.Spec, sc *toolreg.Schema, path string, pos toolreg.Pos, add func(Severity, toolreg.Pos, string, string, string, ...any)) {
	vetParams(s, sc.Properties, path+".properties", add)
	if sc.Items != nil {
		vetSchema(s, sc.Items, path+".items", pos, add)
	}
}

// optionalParams counts the params and properties, at any depth, a call may
// leave out.
func optionalParams(ps []*toolreg.Param) int {
	n := 0
	for _, p := range ps {
		if !p.Required() {
			n++
		}
		n += optionalSchema(&p.Schema)
	}
	return n
}

func optionalSchema(s *toolreg.Schema) int {
	n := optionalParams(s.Properties)
	if s.Items != nil {
		n += optionalSchema(s.Items)
	}
	if s.AdditionalProperties != nil {
		n += optionalSchema(s.AdditionalProperties)
	}
	return n
}
