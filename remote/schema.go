package remote

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
)

// Refusal is one reason a served tool cannot be pinned in a manifest: a part
// of its schema a manifest cannot express, or could express only by changing
// what it means.
type Refusal struct {
	// Path is where in the manifest it would go, such as
	// "params.filter.anyOf"; "" for the tool itself.
	Path string
	// Reason says what is wrong and, where there is one, what would do.
	Reason string
}

func (r Refusal) String() string {
	if r.Path == "" {
		return r.Reason
	}
	return r.Path + ": " + r.Reason
}

// Note is something pin did to a served schema that changes no value it
// accepts or that the model is shown: an annotation keyword left out, an
// open object closed. Pin prints them, so nothing is done silently.
type Note struct {
	Path string
	Text string
}

func (n Note) String() string { return n.Path + ": " + n.Text }

// served is a served tool in manifest terms: the contract pin writes and
// startup compares. Name and side_effect are the manifest's, never the
// server's, so they are not here.
type served struct {
	Description string
	Params      []*toolreg.Param
	Returns     *toolreg.Schema
	Annotations *toolreg.Annotations
	Title       string // MCP's Tool.title
	ReadOnly    bool   // annotations.readOnlyHint
}

// fromMCP converts what a server serves of one tool into manifest terms.
// Anything a manifest cannot say exactly is refused, with the reason; it is
// never simplified away.
func fromMCP(t *mcp.Tool) (*served, []Refusal, []Note) {
	c := &converter{}
	s := &served{Description: t.Description, Title: t.Title}
	if !toolreg.ValidRemoteToolName(t.Name) {
		c.refuse("", "the tool's name %s is not one a manifest can pin (1 to 128 letters, digits, '_', '.', '/' or '-')", quote(t.Name))
	}
	if strings.TrimSpace(t.Description) == "" {
		c.refuse("description", "the server serves no description: a manifest needs one, and the model would have nothing to go by; ask the server's owners for one")
	}
	if a := t.Annotations; a != nil {
		ann := &toolreg.Annotations{Title: a.Title, DestructiveHint: a.DestructiveHint, OpenWorldHint: a.OpenWorldHint}
		if a.IdempotentHint {
			ann.IdempotentHint = &a.IdempotentHint
		}
		s.ReadOnly = a.ReadOnlyHint
		if ann.Title != "" || ann.DestructiveHint != nil || ann.OpenWorldHint != nil || ann.IdempotentHint != nil {
			s.Annotations = ann
		}
	}
	in, ok := asObject(t.InputSchema)
	if !ok {
		c.refuse("params", "the input schema is not a JSON object")
	} else {
		root := c.schema(in, "params", true)
		switch {
		case root == nil:
		case root.Type != toolreg.TypeObject:
			c.refuse("params", "the input schema is of type %s: MCP's input schema, and a manifest's params, are an object", root.Type)
		case root.AdditionalProperties != nil:
			c.refuse("params.additionalProperties", "the input schema takes arguments of any name (additionalProperties): a manifest's params are named one by one; ask the server for named properties")
		case root.HasDefault || root.Enum != nil:
			c.refuse("params", "the input schema has a default or enum for the arguments as a whole, which a manifest's params cannot say")
		default:
			s.Params = root.Properties
			if root.Description != "" {
				c.note("params.description", "left out: the input schema's description of the arguments as a whole has no place in a manifest (its tool description is what the model reads)")
			}
		}
	}
	if t.OutputSchema != nil {
		out, ok := asObject(t.OutputSchema)
		if !ok {
			c.refuse("returns", "the output schema is not a JSON object")
		} else {
			c.result = true
			s.Returns = c.schema(out, "returns", true)
		}
	}
	return s, c.refusals, c.notes
}

// asObject returns v as a JSON object: the SDK's client decodes a schema into
// a map; a server in this process may hand over bytes.
func asObject(v any) (map[string]any, bool) {
	switch v := v.(type) {
	case map[string]any:
		return v, true
	case json.RawMessage:
		var m map[string]any
		return m, json.Unmarshal(v, &m) == nil && m != nil
	case nil:
		return nil, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m) == nil && m != nil
}

type converter struct {
	refusals []Refusal
	notes    []Note
	// result is set while the output schema is converted: a result's open
	// object cannot be closed without refusing results the server may send.
	result bool
}

func (c *converter) refuse(path, format string, args ...any) {
	c.refusals = append(c.refusals, Refusal{Path: path, Reason: fmt.Sprintf(format, args...)})
}

func (c *converter) note(path, format string, args ...any) {
	c.notes = append(c.notes, Note{Path: path, Text: fmt.Sprintf(format, args...)})
}

// annotationKeywords say nothing about which values are valid, and the model
// is shown the manifest, not the served schema: pin leaves them out.
var annotationKeywords = []string{"title", "$comment", "examples", "deprecated", "readOnly", "writeOnly"}

// knownDrafts are the $schema values a served schema may name: the keywords
// pin reads mean the same in each.
var knownDrafts = []string{
	"http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema",
	"https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2019-09/schema",
}

// keywordsOf are the keywords a manifest takes for each type, beyond type,
// description, default and enum.
var keywordsOf = map[toolreg.Type][]string{
	toolreg.TypeString:  {"minLength", "maxLength", "pattern", "format"},
	toolreg.TypeInteger: {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
	toolreg.TypeNumber:  {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
	toolreg.TypeBoolean: {},
	toolreg.TypeArray:   {"minItems", "maxItems", "uniqueItems", "items"},
	toolreg.TypeObject:  {"properties", "required", "additionalProperties"},
}

var paramNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,64}$`)

// schema converts one JSON Schema object at path; nil when it is refused.
func (c *converter) schema(m map[string]any, path string, top bool) *toolreg.Schema {
	n := len(c.refusals)
	s := &toolreg.Schema{}
	typ, ok := m["type"].(string)
	switch {
	case m["type"] == nil:
		c.refuse(path, "no type: a manifest's schema has one of string, integer, number, boolean, array, object%s", combinatorHint(m))
		return nil
	case !ok:
		hint := "a union of types has no manifest form"
		if list, isList := m["type"].([]any); isList && slices.Contains(list, any("null")) {
			hint = "an optional value is a param with required: false, not a type that includes null"
		}
		c.refuse(path+".type", "the type %s is not one type: a manifest's value has one; %s", show(m["type"]), hint)
		return nil
	case !toolreg.Type(typ).Valid():
		c.refuse(path+".type", "type %q has no place in a manifest, which takes string, integer, number, boolean, array, object", typ)
		return nil
	}
	s.Type = toolreg.Type(typ)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		kp := path + "." + k
		switch {
		case k == "type":
		case k == "description":
			if d, ok := v.(string); ok {
				s.Description = d
			} else {
				c.refuse(kp, "the description is not a string")
			}
		case k == "default":
			s.Default, s.HasDefault = c.value(v, kp), true
		case k == "enum":
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				c.refuse(kp, "enum is not a list of values")
				continue
			}
			s.Enum = c.value(list, kp).([]any)
		case k == "const":
			if _, has := m["enum"]; has {
				c.refuse(kp, "const beside enum: a manifest takes one list of allowed values")
				continue
			}
			s.Enum = []any{c.value(v, kp)}
			c.note(kp, "const %s is pinned as enum: [%s], which allows exactly the same value", show(v), show(v))
		case slices.Contains(annotationKeywords, k):
			c.note(kp, "left out: an annotation that changes no value the tool accepts, and the model is shown the manifest, not the served schema")
		case k == "$schema" && top:
			if d, _ := v.(string); !slices.Contains(knownDrafts, d) {
				c.refuse(kp, "the schema names the dialect %s, whose keywords pin cannot vouch for; it reads draft-07 and 2020-12", show(v))
			}
		case slices.Contains(keywordsOf[s.Type], k):
			c.keyword(s, k, v, kp)
		default:
			c.refuse(kp, "%s", unsupported(k, s.Type))
		}
	}
	if s.Type == toolreg.TypeObject {
		c.object(s, m, path)
	}
	if s.Type == toolreg.TypeArray && s.Items == nil && len(c.refusals) == n {
		c.refuse(path+".items", "an array with no items schema: a manifest declares the elements' schema (OpenAI and Gemini refuse an array without it)")
	}
	if len(c.refusals) > n {
		return nil
	}
	return s
}

// object converts an object's properties, required and additionalProperties.
func (c *converter) object(s *toolreg.Schema, m map[string]any, path string) {
	props, _ := m["properties"].(map[string]any)
	if m["properties"] != nil && props == nil {
		c.refuse(path+".properties", "properties is not an object")
		return
	}
	required := map[string]bool{}
	var order []string // required ones first, as listed, then the rest by name
	if r, ok := m["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			c.refuse(path+".required", "required is not a list of names")
			return
		}
		for _, x := range list {
			name, ok := x.(string)
			if !ok {
				c.refuse(path+".required", "required lists %s, which is no name", show(x))
				continue
			}
			if _, ok := props[name]; !ok {
				c.refuse(path+".required", "required names %q, which is no property: a manifest cannot require a value it does not declare", name)
				continue
			}
			if !required[name] {
				order = append(order, name)
			}
			required[name] = true
		}
	}
	var rest []string
	for name := range props {
		if !required[name] {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	order = append(order, rest...)
	for _, name := range order {
		pp := propPath(path, name)
		if !paramNameRE.MatchString(name) {
			c.refuse(pp, "the property name %s is not one every provider accepts (1 to 64 letters, digits, '_', '.' or '-')", quote(name))
			continue
		}
		pm, ok := props[name].(map[string]any)
		if !ok {
			c.refuse(pp, "the property's schema is %s, not an object: a manifest types every value", show(props[name]))
			continue
		}
		ps := c.schema(pm, pp, false)
		if ps == nil {
			continue
		}
		p := &toolreg.Param{Name: name, Schema: *ps}
		p.Optional = !required[name] && !ps.HasDefault
		s.Properties = append(s.Properties, p)
	}
	ap, has := m["additionalProperties"]
	switch v := ap.(type) {
	case bool:
		if v && props != nil {
			c.openObject(path, "additionalProperties: true")
		} else if v {
			c.refuse(path, "an object whose members are untyped (additionalProperties: true and no properties): a manifest types every value; ask the server for properties or an additionalProperties schema")
		}
	case map[string]any:
		if len(v) == 0 {
			if props == nil {
				c.refuse(path, "an object whose members are untyped (additionalProperties: {}): a manifest types every value")
			} else {
				c.openObject(path, "additionalProperties: {}")
			}
			break
		}
		s.AdditionalProperties = c.schema(v, path+".additionalProperties", false)
	case nil:
		if has {
			c.refuse(path+".additionalProperties", "additionalProperties is null")
		} else if props == nil {
			c.refuse(path, "an object with neither properties nor additionalProperties: its members would be untyped; a manifest types every value")
		} else {
			c.openObject(path, "no additionalProperties")
		}
	default:
		c.refuse(path+".additionalProperties", "additionalProperties is %s, neither a boolean nor a schema", show(ap))
	}
}

// openObject handles an object the server leaves open to other members. In
// params the manifest closes it: toolreg then sends only the members it
// declares, which the server accepts; pin says so. In returns, closing it
// would refuse results the server may send: refused.
func (c *converter) openObject(path, how string) {
	if c.result {
		c.refuse(path, "the output schema leaves the object open (%s), and a manifest's returns is closed: a result with other members would be refused as breaking the contract; ask the server to close it (additionalProperties: false)", how)
		return
	}
	c.note(path, "the server leaves the object open (%s); the manifest closes it: toolreg sends only the members the manifest declares", how)
}

// propPath is the manifest path of property name of the schema at path:
// params' members are params.<name>, an object's members
// <path>.properties.<name>.
func propPath(path, name string) string {
	if path == "params" {
		return "params." + name
	}
	return path + ".properties." + name
}

func (c *converter) keyword(s *toolreg.Schema, k string, v any, path string) {
	switch k {
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
		f, ok := v.(float64)
		if !ok {
			if _, isBool := v.(bool); isBool && strings.HasPrefix(k, "exclusive") {
				c.refuse(path, "%s as a boolean is draft-04's form: a manifest takes the bound itself (draft-06 and later)", k)
				return
			}
			c.refuse(path, "%s is %s, not a number", k, show(v))
			return
		}
		n, ok := c.number(f, path)
		if !ok {
			return
		}
		switch k {
		case "minimum":
			s.Minimum = n
		case "maximum":
			s.Maximum = n
		case "exclusiveMinimum":
			s.ExclusiveMinimum = n
		case "exclusiveMaximum":
			s.ExclusiveMaximum = n
		case "multipleOf":
			s.MultipleOf = n
		}
	case "minLength", "maxLength", "minItems", "maxItems":
		f, ok := v.(float64)
		if !ok || f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
			c.refuse(path, "%s is %s, not a count from 0 to 2147483647", k, show(v))
			return
		}
		i := int(f)
		switch k {
		case "minLength":
			s.MinLength = &i
		case "maxLength":
			s.MaxLength = &i
		case "minItems":
			s.MinItems = &i
		case "maxItems":
			s.MaxItems = &i
		}
	case "pattern", "format":
		str, ok := v.(string)
		if !ok {
			c.refuse(path, "%s is %s, not a string", k, show(v))
			return
		}
		if k == "pattern" {
			s.Pattern = str
		} else {
			s.Format = str
		}
	case "uniqueItems":
		b, ok := v.(bool)
		if !ok {
			c.refuse(path, "uniqueItems is %s, not a boolean", show(v))
			return
		}
		s.UniqueItems = b
	case "items":
		m, ok := v.(map[string]any)
		if !ok {
			c.refuse(path, "items is %s: a manifest takes one schema for every element (a tuple, items as a list, has no manifest form)", show(v))
			return
		}
		s.Items = c.schema(m, path, false)
	case "properties", "required", "additionalProperties":
		// object() reads them together.
	}
}

// maxExact is the largest integer every float64 holds exactly: the SDK's
// client reads numbers as float64, so a larger one may not be what the
// server wrote.
const maxExact = 1 << 53

// number is f as the JSON number a manifest writes, refused beyond what a
// float64 holds exactly.
func (c *converter) number(f float64, path string) (json.Number, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		c.refuse(path, "not a finite number")
		return "", false
	}
	if f == math.Trunc(f) && math.Abs(f) > maxExact {
		c.refuse(path, "%s is beyond 2^53: the MCP SDK reads numbers as float64, so pin cannot vouch for its digits; ask the server for a smaller bound", strconv.FormatFloat(f, 'g', -1, 64))
		return "", false
	}
	b, _ := json.Marshal(f)
	return json.Number(b), true
}

// value converts a default or enum value into the form a Spec holds (JSON
// decoded with UseNumber).
func (c *converter) value(v any, path string) any {
	switch v := v.(type) {
	case float64:
		n, _ := c.number(v, path)
		return n
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = c.value(x, path)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = c.value(x, path)
		}
		return out
	}
	return v
}

// unsupported says why keyword k has no place in a manifest's schema of
// type t.
func unsupported(k string, t toolreg.Type) string {
	switch k {
	case "anyOf", "oneOf", "allOf", "not":
		return fmt.Sprintf("%s combines schemas, and a manifest's value has one type and one schema; an optional value is a param with required: false, not anyOf with null", k)
	case "$ref", "$defs", "definitions", "$id", "$anchor", "$dynamicRef":
		return fmt.Sprintf("%s: a manifest's schema is written out whole, with no references; ask the server to inline its definitions", k)
	case "if", "then", "else", "dependentRequired", "dependentSchemas", "dependencies":
		return fmt.Sprintf("%s makes a constraint depend on another value, which a manifest cannot say", k)
	case "patternProperties", "propertyNames", "minProperties", "maxProperties", "unevaluatedProperties":
		return fmt.Sprintf("%s constrains an object's member names or count, which a manifest cannot say", k)
	case "prefixItems", "contains", "minContains", "maxContains", "unevaluatedItems", "additionalItems":
		return fmt.Sprintf("%s has no manifest form: a manifest's array has one items schema", k)
	case "nullable":
		return "nullable (OpenAPI) has no manifest form: an optional value is a param with required: false"
	}
	for typ, ks := range keywordsOf {
		if typ != t && slices.Contains(ks, k) {
			return fmt.Sprintf("%s is a keyword of type %s, and this value is of type %s: a manifest takes only the keywords of the value's type", k, typ, t)
		}
	}
	return fmt.Sprintf("the keyword %q has no place in a manifest's schema", k)
}

func combinatorHint(m map[string]any) string {
	for _, k := range []string{"anyOf", "oneOf", "allOf", "$ref"} {
		if _, ok := m[k]; ok {
			return fmt.Sprintf(" (this one is a %s, which a manifest cannot express)", k)
		}
	}
	return ""
}

// show renders v as JSON, cut to a readable length.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return cut(string(b), 64)
}

func quote(s string) string { return cut(strconv.Quote(s), 72) }

// cut shortens s to at most n bytes, on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("…(+%d bytes)", len(s)-i)
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
