package diag

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Severity is how much a diagnostic matters.
type Severity int

// The severities, most severe first.
const (
	Error Severity = iota
	Warning
	Note
)

func (s Severity) String() string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	case Note:
		return "note"
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

// Diagnostic is one finding.
type Diagnostic struct {
	Severity Severity
	// Rule is the stable id of the check that found it, such as "manifest"
	// or "breaking"; it is one of the Tool's Rules.
	Rule string
	// File names the file, slash-separated, relative to the directory the
	// command ran in (the repository root in CI); "" when there is none.
	File string
	Line int // 1-based; 0 when unknown
	Col  int // 1-based; 0 when unknown
	// Title is a short heading, such as the tool and field the finding is
	// about; "" for none.
	Title   string
	Message string
}

// Tool describes the program that reports: SARIF names it, and its rules.
type Tool struct {
	Name           string
	Version        string
	InformationURI string
	Rules          []Rule
}

// Rule is one check a Tool runs.
type Rule struct {
	ID          string
	Description string // one sentence
}

// Format is a machine-readable output.
type Format string

// The formats.
const (
	GitHub Format = "github"
	SARIF  Format = "sarif"
	JSONL  Format = "jsonl"
)

// Formats lists the formats, in the order a command's help names them.
var Formats = []Format{GitHub, SARIF, JSONL}

// FormatNames is Formats joined by ", ", for a flag's usage.
func FormatNames() string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

// ParseFormat returns the format called name, and false when there is none.
func ParseFormat(name string) (Format, bool) {
	f := Format(name)
	return f, slices.Contains(Formats, f)
}

// UnknownRuleError reports a diagnostic whose rule its tool does not declare.
type UnknownRuleError struct {
	Tool string
	Rule string
}

func (e *UnknownRuleError) Error() string {
	return fmt.Sprintf("diag: %s reports rule %q, which it does not declare in its Tool.Rules", e.Tool, e.Rule)
}

// Write encodes ds in format f to w. Every diagnostic's rule must be one of
// tool's (a *UnknownRuleError otherwise), so that a SARIF log is whole.
func Write(w io.Writer, f Format, tool Tool, ds []Diagnostic) error {
	for _, d := range ds {
		if !slices.ContainsFunc(tool.Rules, func(r Rule) bool { return r.ID == d.Rule }) {
			return &UnknownRuleError{Tool: tool.Name, Rule: d.Rule}
		}
	}
	switch f {
	case GitHub:
		return writeGitHub(w, ds)
	case SARIF:
		return writeSARIF(w, tool, ds)
	case JSONL:
		return writeJSONL(w, ds)
	}
	return fmt.Errorf("diag: unknown format %q: use one of %s", f, FormatNames())
}
