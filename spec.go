package toolreg

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/beam-agents/toolreg/internal/pattern"
)

// Type is a parameter's JSON type, as a manifest names it.
type Type string

// The six JSON types a manifest param may declare.
const (
	TypeString  Type = "string"
	TypeInteger Type = "integer"
	TypeNumber  Type = "number"
	TypeBoolean Type = "boolean"
	TypeArray   Type = "array"
	TypeObject  Type = "object"
)

// Valid reports whether t is one of the six manifest types.
func (t Type) Valid() bool {
	switch t {
	case TypeString, TypeInteger, TypeNumber, TypeBoolean, TypeArray, TypeObject:
		return true
	}
	return false
}

// Pos is a position in a manifest file. Line and Col are 1-based; zero means unknown.
type Pos struct {
	File string
	Line int
	Col  int
}

// String renders p as file:line:col, dropping the parts that are unknown.
func (p Pos) String() string {
	s := p.File
	if s == "" {
		s = "-"
	}
	if p.Line > 0 {
		s += ":" + strconv.Itoa(p.Line)
		if p.Col > 0 {
			s += ":" + strconv.Itoa(p.Col)
		}
	}
	return s
}

// IsValid reports whether p names a file.
func (p Pos) IsValid() bool { return p.File != "" }

// Schema is the typed shape of one value: a tool parameter, an array's items, an
// object's additional properties. Constraint fields keep their JSON Schema names.
//
// JSON values (Default, Enum) are held decoded as encoding/json decodes into any
// with UseNumber: nil, bool, json.Number, string, []any, map[string]any.
type Schema struct {
	Type        Type
	Description string

	// Default is the value used when the argument is absent; it is meaningful only
	// when HasDefault is true (a default may be JSON null).
	Default    any
	HasDefault bool

	Enum []any

	// The numeric bounds are held as the manifest writes them, digit for
	// digit, and checked exactly: 9007199254740993, which no float64 holds,
	// stays itself. "" means the keyword is absent; a value must be a JSON
	// number (Validate says so).
	Minimum          json.Number
	Maximum          json.Number
	ExclusiveMinimum json.Number
	ExclusiveMaximum json.Number
	MultipleOf       json.Number

	MinLength *int
	MaxLength *int
	Pattern   string
	Format    string

	MinItems    *int
	MaxItems    *int
	UniqueItems bool
	Items       *Schema

	// Properties are an object's named members, in declaration order.
	Properties []*Param
	// AdditionalProperties is the schema of an object's other members. When nil,
	// an object with Properties is closed: members it does not name are refused.
	AdditionalProperties *Schema
}

// Param is one named parameter of a tool (or one property of an object param).
type Param struct {
	Name string
	Schema
	// Optional is true for a param marked `required: false` in its manifest.
	// A param with a default is optional too; see Required.
	Optional bool
	// Pos is where the param is declared.
	Pos Pos
}

// Required reports whether a call must supply the param: it has no default and is
// not marked `required: false`.
func (p *Param) Required() bool { return !p.HasDefault && !p.Optional }

// Annotations are hints about a tool's behaviour for clients such as MCP hosts.
// A nil field means the manifest does not say.
type Annotations struct {
	Title           string
	DestructiveHint *bool
	IdempotentHint  *bool
	OpenWorldHint   *bool
}

// Approval is a side-effecting tool's demand for a person's decision before
// each call runs.
type Approval struct {
	// Reason is shown to the approver; "" when the manifest gives none.
	Reason string
	// Timeout is how long a decision may take; past it the request is
	// EXPIRED. Zero means the intent's own time-to-live.
	Timeout time.Duration
}

// Spec is one tool's contract as a manifest declares it.
type Spec struct {
	Name        string
	Description string
	// SideEffect marks a tool whose call changes the world. Such a tool never runs
	// inline: it is requested as an Intent and executed once by the effector.
	SideEffect bool
	// Strict turns off lax coercion of arguments ("10" for an integer, and so on).
	Strict bool
	// Params are the tool's parameters in declaration order.
	Params []*Param
	// Returns is the schema of the tool's result; nil when the manifest does
	// not declare one, and then results are not checked.
	Returns *Schema
	// Approval is set when the manifest says approval: required: Act stages
	// the call as an APPROVAL intent, and the effector executes it once a
	// person approves it.
	Approval    *Approval
	Annotations *Annotations
	// Tags group tools, for search filters; Keywords are more words a tool
	// search matches the tool by. Neither is shown to the model.
	Tags     []string
	Keywords []string
	// Scopes are the scopes a caller's principal must hold, every one, to
	// call the tool, be offered it, list it or find it (see Principal); nil
	// for a tool anyone may call.
	Scopes []string
	// Budgets limit how often the tool is called; nil for no limit.
	Budgets *Budgets
	// Remote is set for a tool an MCP server serves: the manifest pins what
	// the server serves, and package remote binds it (see Remote).
	Remote *Remote
	// Pos is where the tool is declared.
	Pos Pos
}

// Param returns the parameter called name, or nil.
func (s *Spec) Param(name string) *Param {
	for _, p := range s.Params {
		if p.Name == name {
			return p
		}
	}
	return nil
}

var (
	nameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	// tagRE is schema.cue's #Tag.
	tagRE = regexp.MustCompile(`^[a-zA-Z0-9_.:-]{1,64}$`)
)

// ValidName reports whether name is a tool name every major model provider accepts:
// 1 to 64 ASCII letters, digits, '_' or '-'.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// Validate checks the rules of schema.cue that a Spec built in Go, rather than
// loaded from a manifest, could break. It reports every problem at once as a
// *ToolDefinitionError.
func (s *Spec) Validate() error {
	var ps []Problem
	add := func(pos Pos, path, format string, args ...any) {
		if !pos.IsValid() {
			pos = s.Pos
		}
		ps = append(ps, Problem{Pos: pos, Tool: s.Name, Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if !ValidName(s.Name) {
		add(s.Pos, "name", "invalid tool name %q: use 1 to 64 letters, digits, '_' or '-'", s.Name)
	}
	if s.Description == "" {
		add(s.Pos, "description", "missing description: say what the tool does, for the model")
	}
	checkParams(s.Params, "params", add)
	if s.Returns != nil {
		checkSchema(s.Returns, s.Pos, "returns", add)
	}
	if s.Approval != nil && !s.SideEffect {
		add(s.Pos, "approval", "only a side-effecting tool (side_effect: true) takes approval: a read-only tool runs inline, with nothing to approve")
	}
	if s.Approval != nil && s.Approval.Timeout < 0 {
		add(s.Pos, "approval_timeout", "approval_timeout %s is negative: give a positive duration, or none", s.Approval.Timeout)
	}
	if s.Remote != nil {
		checkRemote(s, add)
	}
	for i, t := range s.Tags {
		if !tagRE.MatchString(t) {
			add(s.Pos, fmt.Sprintf("tags.%d", i), "invalid tag %q: use 1 to 64 letters, digits, '_', '.', ':' or '-'", t)
		}
	}
	for i, k := range s.Keywords {
		if k == "" {
			add(s.Pos, fmt.Sprintf("keywords.%d", i), "empty keyword: remove it or write the word a search should match")
		}
	}
	for _, p := range s.authorityProblems() {
		add(s.Pos, p.Path, "%s", p.Message)
	}
	if len(ps) > 0 {
		return &ToolDefinitionError{Problems: ps}
	}
	return nil
}

func checkParams(params []*Param, path string, add func(Pos, string, string, ...any)) {
	seen := make(map[string]bool, len(params))
	for _, p := range params {
		pp := path + "." + p.Name
		if p.Name == "" {
			add(p.Pos, path, "a param has no name")
		}
		if seen[p.Name] {
			add(p.Pos, pp, "param %q is declared twice", p.Name)
		}
		seen[p.Name] = true
		checkSchema(&p.Schema, p.Pos, pp, add)
	}
}

func checkSchema(s *Schema, pos Pos, path string, add func(Pos, string, string, ...any)) {
	switch {
	case s.Type == "":
		add(pos, path, "missing type: set type to one of string, integer, number, boolean, array, object")
	case !s.Type.Valid():
		add(pos, path+".type", "unknown type %q: use one of string, integer, number, boolean, array, object", s.Type)
	}
	for _, b := range []struct {
		key string
		v   json.Number
	}{{"minimum", s.Minimum}, {"maximum", s.Maximum}, {"exclusiveMinimum", s.ExclusiveMinimum}, {"exclusiveMaximum", s.ExclusiveMaximum}, {"multipleOf", s.MultipleOf}} {
		if b.v != "" && !validNumber(b.v) {
			add(pos, path+"."+b.key, "%s %q is not a JSON number within float64's range: write it as JSON does, such as 10, -0.5 or 1e3", b.key, string(b.v))
		}
	}
	if s.MultipleOf != "" && validNumber(s.MultipleOf) && !positive(s.MultipleOf) {
		add(pos, path+".multipleOf", "multipleOf %s is not positive: use a number above 0", s.MultipleOf)
	}
	if s.Pattern != "" {
		if err := pattern.Check(s.Pattern); err != nil {
			add(pos, path+".pattern", "%v", err)
		}
	}
	if s.Type == TypeArray && s.Items == nil {
		add(pos, path+".items", "missing items: declare items, the schema of the array's elements (OpenAI and Gemini refuse an array without it)")
	}
	if s.Items != nil {
		checkSchema(s.Items, pos, path+".items", add)
	}
	if s.AdditionalProperties != nil {
		checkSchema(s.AdditionalProperties, pos, path+".additionalProperties", add)
	}
	checkParams(s.Properties, path+".properties", add)
}

// MarshalJSON renders the param schema as JSON Schema, keys in a fixed order.
func (s *Schema) MarshalJSON() ([]byte, error) {
	return appendSchema(nil, s)
}

// ParametersSchema returns the JSON Schema object of the tool's parameters:
// properties in declaration order, required listing the params a call must
// supply, additionalProperties false.
func (s *Spec) ParametersSchema() json.RawMessage {
	b, err := appendSchema(nil, &Schema{Type: TypeObject, Properties: s.Params})
	if err != nil {
		// Only an unencodable Default or Enum value gets here; a loaded Spec holds
		// decoded JSON, which always encodes.
		panic(fmt.Sprintf("toolreg: %s: %v", s.Name, err))
	}
	return b
}

// ResultSchema returns the JSON Schema of the tool's result, as MCP's
// outputSchema carries it, or nil when the manifest declares no returns. An
// object's properties are in declaration order, required lists those a
// result must have, and additionalProperties is false unless declared.
func (s *Spec) ResultSchema() json.RawMessage {
	if s.Returns == nil {
		return nil
	}
	b, err := appendSchema(nil, s.Returns)
	if err != nil {
		panic(fmt.Sprintf("toolreg: %s: returns: %v", s.Name, err))
	}
	return b
}

// validNumber reports whether n is a JSON number a float64 can hold: what a
// JSON Schema consumer (JavaScript) can read.
func validNumber(n json.Number) bool {
	t := string(n)
	if t == "" || !json.Valid([]byte(t)) || !(t[0] == '-' || t[0] >= '0' && t[0] <= '9') {
		return false
	}
	_, err := strconv.ParseFloat(t, 64)
	return err == nil
}

// positive reports whether the valid JSON number n is above 0.
func positive(n json.Number) bool {
	t := strings.TrimLeft(string(n), "-0.")
	return !strings.HasPrefix(string(n), "-") && t != "" && !strings.HasPrefix(t, "e") && !strings.HasPrefix(t, "E")
}
