package provider

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/canonjson"
)

type wrapper int

const (
	wrapOpenAIChat wrapper = iota
	wrapOpenAIResponses
	wrapAnthropic
	wrapGemini
	wrapGeminiJSON
	wrapMCP
)

// rules are what a form does with the contract.
type rules struct {
	form         string
	wrap         wrapper
	strict       bool // OpenAI strict mode
	claudeStrict bool // Anthropic strict tool use
	gemini       bool // Gemini's OpenAPI schema subset (parameters)
	geminiJSON   bool // Gemini's JSON Schema subset (parametersJsonSchema)
	// lax names the provider when the form does not have it hold arguments
	// to the schema (no strict mode): each constraint the form keeps is then
	// noted as NotEnforced.
	lax string
}

func rulesFor(form string) (rules, bool) {
	switch form {
	case OpenAI:
		return rules{form: form, wrap: wrapOpenAIChat, lax: "openai"}, true
	case OpenAIResponses:
		return rules{form: form, wrap: wrapOpenAIResponses, lax: "openai"}, true
	case OpenAIStrict:
		return rules{form: form, wrap: wrapOpenAIChat, strict: true}, true
	case OpenAIStrictResponses:
		return rules{form: form, wrap: wrapOpenAIResponses, strict: true}, true
	case Anthropic:
		return rules{form: form, wrap: wrapAnthropic, lax: "anthropic"}, true
	case AnthropicStrict:
		return rules{form: form, wrap: wrapAnthropic, claudeStrict: true}, true
	case Gemini:
		return rules{form: form, wrap: wrapGemini, gemini: true, lax: "gemini"}, true
	case GeminiJSONSchema:
		return rules{form: form, wrap: wrapGeminiJSON, geminiJSON: true, lax: "gemini"}, true
	case MCP:
		return rules{form: form, wrap: wrapMCP}, true
	}
	return rules{}, false
}

// Limits of OpenAI strict mode (Structured Outputs guide, "Objects have
// limitations on nesting depth and size").
const (
	strictMaxDepth      = 10   // levels of object nesting
	strictMaxProperties = 5000 // object properties in the whole schema
	strictMaxEnumValues = 1000 // enum values in the whole schema
	// "Limitations on total string size": the property names, definition
	// names, enum values and const values of a schema, in characters.
	strictMaxStringTotal = 120000
	// "Limitations on enum size": one string enum of more than
	// strictBigEnum values may total at most strictMaxBigEnumChars characters.
	strictBigEnum         = 250
	strictMaxBigEnumChars = 15000
)

// strictFormats are the string formats strict mode accepts; any other format
// moves into the description.
var strictFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}

// claudeFormats are the string formats Anthropic's strict tool use accepts
// (Structured outputs, "JSON Schema limitations").
var claudeFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}

// geminiJSONFormats are the string formats Gemini's JSON Schema support lists
// (Structured output, "JSON Schema support").
var geminiJSONFormats = []string{"date-time", "date", "time"}

type walker struct {
	rules
	spec     *toolreg.Spec
	b        []byte
	notes    []Note
	problems []toolreg.Problem

	props, enums int // strict mode's whole-schema counters
	chars        int // characters of property names and enum values
}

func (w *walker) str(s string) {
	w.b = canonjson.AppendString(w.b, s) // as canonjson.Marshal(s) writes it, in place
}

func (w *walker) key(k string) {
	w.b = append(w.b, ',', '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

func (w *walker) note(pos toolreg.Pos, path, keyword string, a Action, detail string) {
	if !pos.IsValid() {
		pos = w.spec.Pos
	}
	w.notes = append(w.notes, Note{Form: w.form, Tool: w.spec.Name, Pos: pos, Path: path, Keyword: keyword, Action: a, Detail: detail})
}

func (w *walker) problem(pos toolreg.Pos, path, format string, args ...any) {
	if !pos.IsValid() {
		pos = w.spec.Pos
	}
	w.problems = append(w.problems, toolreg.Problem{Pos: pos, Tool: w.spec.Name, Path: path, Message: fmt.Sprintf(format, args...)})
}

// tool writes the whole tool in the form's wrapper.
func (w *walker) tool() {
	s := w.spec
	switch w.wrap {
	case wrapOpenAIChat:
		w.b = append(w.b, `{"type":"function","function":{"name":`...)
		w.str(s.Name)
		w.desc()
		w.key("parameters")
		w.params()
		if w.strict {
			w.b = append(w.b, `,"strict":true`...)
		}
		w.b = append(w.b, "}}"...)
	case wrapOpenAIResponses:
		w.b = append(w.b, `{"type":"function","name":`...)
		w.str(s.Name)
		w.desc()
		w.key("parameters")
		w.params()
		// The Responses API takes strict as true when it is left out, so the
		// non-strict form must say false.
		w.b = strconv.AppendBool(append(w.b, `,"strict":`...), w.strict)
		w.b = append(w.b, '}')
	case wrapAnthropic:
		w.b = append(w.b, `{"name":`...)
		w.str(s.Name)
		w.desc()
		w.key("input_schema")
		w.params()
		if w.claudeStrict {
			w.b = append(w.b, `,"strict":true`...)
		}
		w.b = append(w.b, '}')
	case wrapGemini:
		w.b = append(w.b, `{"name":`...)
		w.str(s.Name)
		w.desc()
		// Gemini refuses an object parameters schema with no properties: a tool
		// without params declares none.
		if len(s.Params) > 0 {
			w.key("parameters")
			w.params()
		}
		w.b = append(w.b, '}')
	case wrapGeminiJSON:
		w.b = append(w.b, `{"name":`...)
		w.str(s.Name)
		w.desc()
		// Like parameters, left out for a tool that takes none.
		if len(s.Params) > 0 {
			w.key("parametersJsonSchema")
			w.params()
		}
		w.b = append(w.b, '}')
	case wrapMCP:
		w.b = append(w.b, `{"name":`...)
		w.str(s.Name)
		if a := s.Annotations; a != nil && a.Title != "" {
			w.key("title")
			w.str(a.Title)
		}
		w.desc()
		w.key("inputSchema")
		w.params()
		// MCP's outputSchema describes structuredContent, which is always a
		// JSON object: a tool whose returns is not an object has none, and
		// its result goes to the client as text alone.
		if s.Returns != nil && s.Returns.Type == toolreg.TypeObject {
			w.key("outputSchema")
			w.b = append(w.b, s.ResultSchema()...)
		}
		w.annotations()
		w.b = append(w.b, '}')
	}
}

func (w *walker) desc() {
	if w.spec.Description != "" {
		w.key("description")
		w.str(w.spec.Description)
	}
}

// annotations writes MCP's tool annotations. readOnlyHint and idempotentHint
// are always written (the MCP SDK's ToolAnnotations always carries them, and
// false is the protocol's default for both); the others only when set.
// idempotentHint defaults to true for a read-only tool (calling it again
// changes nothing, so a host may retry it) and to false for a side-effecting
// one; the manifest's annotations.idempotentHint overrides either.
func (w *walker) annotations() {
	a := w.spec.Annotations
	if a == nil {
		a = &toolreg.Annotations{}
	}
	w.b = append(w.b, `,"annotations":{`...)
	if a.Title != "" {
		w.b = append(w.b, `"title":`...)
		w.str(a.Title)
		w.b = append(w.b, ',')
	}
	w.b = strconv.AppendBool(append(w.b, `"readOnlyHint":`...), !w.spec.SideEffect)
	if a.DestructiveHint != nil {
		w.b = strconv.AppendBool(append(w.b, `,"destructiveHint":`...), *a.DestructiveHint)
	}
	idempotent := !w.spec.SideEffect
	if a.IdempotentHint != nil {
		idempotent = *a.IdempotentHint
	}
	w.b = strconv.AppendBool(append(w.b, `,"idempotentHint":`...), idempotent)
	if a.OpenWorldHint != nil {
		w.b = strconv.AppendBool(append(w.b, `,"openWorldHint":`...), *a.OpenWorldHint)
	}
	w.b = append(w.b, '}')
}

// params writes the parameters object schema.
func (w *walker) params() {
	if w.lax != "" && len(w.spec.Params) > 0 {
		w.note(w.spec.Pos, "params", "type", NotEnforced, "types, required members and closed objects kept but not enforced: "+w.laxReason())
	}
	w.b = append(w.b, `{"type":"object"`...)
	w.object(&toolreg.Schema{Type: toolreg.TypeObject, Properties: w.spec.Params}, "params", w.spec.Pos, 1, true)
	w.b = append(w.b, '}')
}

// kw is one constraint keyword a schema declares, with its JSON value.
type kw struct {
	key, value string
}

// keywords lists the constraint keywords s declares, in the order toolreg
// writes them. Items, properties and additionalProperties are schemas and are
// walked instead.
func keywords(s *toolreg.Schema) []kw {
	var ks []kw
	val := func(key string, v any) {
		b, err := canonjson.Marshal(v)
		if err != nil {
			b = []byte(fmt.Sprintf("%q", fmt.Sprint(v)))
		}
		ks = append(ks, kw{key, string(b)})
	}
	num := func(key string, v json.Number) {
		if v != "" {
			ks = append(ks, kw{key, string(v)})
		}
	}
	integer := func(key string, v *int) {
		if v != nil {
			ks = append(ks, kw{key, strconv.Itoa(*v)})
		}
	}
	if s.HasDefault {
		val("default", s.Default)
	}
	if s.Enum != nil {
		val("enum", s.Enum)
	}
	num("minimum", s.Minimum)
	num("maximum", s.Maximum)
	num("exclusiveMinimum", s.ExclusiveMinimum)
	num("exclusiveMaximum", s.ExclusiveMaximum)
	num("multipleOf", s.MultipleOf)
	integer("minLength", s.MinLength)
	integer("maxLength", s.MaxLength)
	if s.Pattern != "" {
		val("pattern", s.Pattern)
	}
	if s.Format != "" {
		val("format", s.Format)
	}
	integer("minItems", s.MinItems)
	integer("maxItems", s.MaxItems)
	if s.UniqueItems {
		ks = append(ks, kw{"uniqueItems", "true"})
	}
	return ks
}

// laxReason says why a kept keyword is not enforced.
func (w *walker) laxReason() string {
	switch w.lax {
	case "gemini":
		// Gemini's function calling mode VALIDATED is a request setting, not
		// part of the tool: the form cannot assume it.
		return "gemini holds arguments to the schema only in function calling mode VALIDATED; toolreg checks every call"
	case "anthropic":
		return "anthropic holds arguments to the schema only in strict mode (the anthropic-strict form); toolreg checks every call"
	}
	return w.lax + " holds arguments to the schema only in strict mode (the openai-strict forms); toolreg checks every call"
}

// keeps reports whether the form keeps keyword k of s in the schema; a
// keyword it does not keep moves into the description.
func (w *walker) keeps(k kw, s *toolreg.Schema) bool {
	switch {
	case w.claudeStrict:
		switch k.key {
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
			"minLength", "maxLength", "maxItems", "uniqueItems":
			return false
		case "minItems":
			return *s.MinItems <= 1 // only 0 and 1 are supported
		case "format":
			return slices.Contains(claudeFormats, s.Format)
		case "pattern":
			return claudePattern(s.Pattern)
		case "enum":
			return scalarEnum(s.Enum)
		}
	case w.geminiJSON:
		switch k.key {
		case "default", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
			"minLength", "maxLength", "pattern", "uniqueItems":
			return false
		case "format":
			return slices.Contains(geminiJSONFormats, s.Format)
		case "enum":
			return s.Type == toolreg.TypeString || s.Type == toolreg.TypeNumber || s.Type == toolreg.TypeInteger
		}
	case w.strict:
		switch k.key {
		case "default", "minLength", "maxLength", "uniqueItems":
			return false
		case "format":
			return slices.Contains(strictFormats, s.Format)
		}
	case w.gemini:
		switch k.key {
		case "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "uniqueItems", "format":
			return false
		case "enum":
			// Gemini's enum holds strings only.
			return s.Type == toolreg.TypeString
		}
	}
	return true
}

// schema writes s, a value at manifest path. optional is true for an object
// member a call may leave out: strict mode makes it required and nullable.
func (w *walker) schema(s *toolreg.Schema, path string, pos toolreg.Pos, optional bool, depth int) {
	ks := keywords(s)
	var moved []string
	nullable := w.strict && optional
	if nullable {
		moved = append(moved, "null means not given")
		w.note(pos, path, "required", Rewritten, "optional param made required and nullable: null means not given")
	}
	for _, k := range ks {
		switch {
		case !w.keeps(k, s):
			moved = append(moved, k.key+": "+k.value)
			w.note(pos, path, k.key, Moved, k.key+": "+k.value+" moved into the description")
		case w.gemini && k.key == "default":
			// Gemini's Schema takes default for documentation only.
			w.note(pos, path, k.key, NotEnforced, k.key+": "+k.value+" kept, but gemini ignores it (its Schema takes default for documentation only); toolreg applies the default itself")
		case w.lax != "":
			w.note(pos, path, k.key, NotEnforced, k.key+": "+k.value+" kept but not enforced: "+w.laxReason())
		}
	}
	if w.gemini && s.AdditionalProperties != nil && s.Type == toolreg.TypeObject {
		b, _ := s.AdditionalProperties.MarshalJSON()
		moved = append(moved, "additionalProperties: "+string(b))
		w.note(pos, path, "additionalProperties", Moved, "additionalProperties schema moved into the description")
	}

	w.b = append(w.b, `{"type":`...)
	if nullable {
		w.b = append(w.b, '[')
		w.str(string(s.Type))
		w.b = append(w.b, `,"null"]`...)
	} else {
		w.str(string(s.Type))
	}
	if d := description(s.Description, moved); d != "" {
		w.key("description")
		w.str(d)
	}
	for _, k := range ks {
		if !w.keeps(k, s) {
			continue
		}
		w.key(k.key)
		if k.key == "enum" && w.strict {
			w.enums += len(s.Enum)
			w.strictEnum(s, path, pos)
			if nullable && !slices.Contains(s.Enum, nil) {
				// A nullable enum must list null, or strict mode cannot send it.
				w.b = append(w.b, k.value[:len(k.value)-1]...)
				w.b = append(w.b, ",null]"...)
				continue
			}
		}
		w.b = append(w.b, k.value...)
	}
	if s.Items != nil {
		w.key("items")
		w.schema(s.Items, path+".items", pos, false, depth)
	}
	if s.Type == toolreg.TypeObject {
		w.object(s, path, pos, depth+1, false)
	} else if s.AdditionalProperties != nil && !w.gemini {
		// Not meaningful on a non-object, but kept as toolreg writes it.
		w.key("additionalProperties")
		w.schema(s.AdditionalProperties, path+".additionalProperties", pos, false, depth)
	}
	w.b = append(w.b, '}')
}

// description joins a schema's description with the keywords moved into it.
func description(d string, moved []string) string {
	if len(moved) == 0 {
		return d
	}
	m := strings.Join(moved, "; ")
	if d == "" {
		return m
	}
	return d + " (" + m + ")"
}

// object writes the members of an object schema (properties, required,
// additionalProperties) after its opening keywords. depth counts object
// nesting, the parameters object being 1.
func (w *walker) object(s *toolreg.Schema, path string, pos toolreg.Pos, depth int, root bool) {
	if w.claudeStrict && s.AdditionalProperties != nil {
		w.problem(pos, path+".additionalProperties", "an object with additionalProperties (a map with free keys) cannot be strict: Anthropic's strict tool use needs additionalProperties: false; declare its properties, or take a list of {key, value} objects")
	}
	if w.strict {
		if depth > strictMaxDepth {
			w.problem(pos, path, "nested %d objects deep: strict mode allows %d levels; flatten the param", depth, strictMaxDepth)
		}
		w.props += len(s.Properties)
		for _, p := range s.Properties {
			w.chars += utf8.RuneCountInString(p.Name)
		}
		if root {
			defer w.strictTotals(pos)
		}
		if s.AdditionalProperties != nil {
			w.problem(pos, path+".additionalProperties", "an object with additionalProperties (a map with free keys) cannot be strict: strict mode needs every member named; declare its properties, or take a list of {key, value} objects")
		}
	}
	if w.gemini && len(s.Properties) == 0 {
		if !root {
			w.problem(pos, path, "gemini refuses an object schema with no properties: declare its properties, or take the value as a JSON string")
		}
		return
	}
	if w.gemini {
		// Gemini's schema has no additionalProperties: the object is open to the
		// provider, while toolreg still refuses members it does not name.
		w.note(pos, path, "additionalProperties", Dropped, "additionalProperties: false dropped: the provider does not close the object (toolreg still refuses unknown members)")
	}
	w.b = append(w.b, `,"properties":{`...)
	for i, p := range s.Properties {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(p.Name)
		w.b = append(w.b, ':')
		ppos := p.Pos
		if !ppos.IsValid() {
			ppos = pos
		}
		w.schema(&p.Schema, path+"."+p.Name, ppos, !p.Required(), depth)
	}
	w.b = append(w.b, '}')
	n := 0
	for _, p := range s.Properties {
		if w.strict || p.Required() {
			n++
		}
	}
	// Anthropic's SDK and Gemini take an empty required list as absent; leave
	// it out there so the form survives their types unchanged.
	if n > 0 || !(w.gemini || w.geminiJSON || (root && w.wrap == wrapAnthropic)) {
		w.b = append(w.b, `,"required":[`...)
		n = 0
		for _, p := range s.Properties {
			if w.strict || p.Required() {
				if n > 0 {
					w.b = append(w.b, ',')
				}
				w.str(p.Name)
				n++
			}
		}
		w.b = append(w.b, ']')
	}
	switch {
	case w.gemini:
	case s.AdditionalProperties != nil && !w.strict && !w.claudeStrict:
		w.key("additionalProperties")
		w.schema(s.AdditionalProperties, path+".additionalProperties", pos, false, depth)
	default:
		w.b = append(w.b, `,"additionalProperties":false`...)
	}
}

func (w *walker) strictTotals(pos toolreg.Pos) {
	if w.props > strictMaxProperties {
		w.problem(pos, "params", "%d object properties in all: strict mode allows %d", w.props, strictMaxProperties)
	}
	if w.enums > strictMaxEnumValues {
		w.problem(pos, "params", "%d enum values in all: strict mode allows %d", w.enums, strictMaxEnumValues)
	}
	if w.chars > strictMaxStringTotal {
		w.problem(pos, "params", "%d characters of property names and enum values in all: strict mode allows %d; shorten them, or take a free string checked by pattern", w.chars, strictMaxStringTotal)
	}
}

// strictEnum counts an enum's characters into the schema's total, and checks
// the cap on one big string enum.
func (w *walker) strictEnum(s *toolreg.Schema, path string, pos toolreg.Pos) {
	n, strs := 0, true
	for _, v := range s.Enum {
		if str, ok := v.(string); ok {
			n += utf8.RuneCountInString(str)
			continue
		}
		strs = false
		b, _ := canonjson.Marshal(v)
		n += utf8.RuneCount(b)
	}
	w.chars += n
	if strs && len(s.Enum) > strictBigEnum && n > strictMaxBigEnumChars {
		w.problem(pos, path, "%d string enum values of %d characters in all: strict mode allows %d characters in an enum of more than %d values; shorten the values or split the param",
			len(s.Enum), n, strictMaxBigEnumChars, strictBigEnum)
	}
}

// claudePattern reports whether Anthropic's strict tool use takes pattern:
// it refuses backreferences, lookaround and word boundaries. RE2, which
// toolreg compiles patterns with, has no backreferences or lookaround, so
// only \b and \B are left to find.
func claudePattern(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] != '\\' || i+1 == len(p) {
			continue
		}
		i++
		if p[i] == 'b' || p[i] == 'B' {
			return false
		}
	}
	return true
}

// scalarEnum reports whether every enum value is a string, number, boolean or
// null: Anthropic's strict tool use takes no complex types in an enum.
func scalarEnum(vs []any) bool {
	for _, v := range vs {
		switch v.(type) {
		case []any, map[string]any:
			return false
		}
	}
	return true
}
