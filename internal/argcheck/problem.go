package argcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Problem is one argument that breaks the schema.
type Problem struct {
	// Path is a JSON Pointer to the failing value ("/limit", "/tags/2"); ""
	// is the arguments object itself.
	Path string
	// Want says what the schema asks for ("integer", "at most 100").
	Want string
	// Got says what came (`"ten"`, "nothing", "an unknown parameter").
	Got string
}

func (p Problem) String() string {
	path := p.Path
	if path == "" {
		path = "(arguments)"
	}
	return fmt.Sprintf("%s: want %s, got %s", path, p.Want, p.Got)
}

// Error lists every problem found in one set of arguments.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	s := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		s[i] = p.String()
	}
	return "argcheck: invalid arguments: " + strings.Join(s, "; ")
}

// problems flattens the validator's error tree into one Problem per failing
// keyword at each path.
func (c *Checker) problems(ve *jsonschema.ValidationError, args any, ps []Problem) []Problem {
	if len(ve.Causes) > 0 {
		for _, cause := range ve.Causes {
			ps = c.problems(cause, args, ps)
		}
		return ps
	}
	path := pointer(ve.InstanceLocation)
	val, _ := lookup(args, ve.InstanceLocation)
	n := c.nodeAt(ve.InstanceLocation)
	add := func(path, want, got string) { ps = append(ps, Problem{Path: path, Want: want, Got: got}) }
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		for _, name := range k.Missing {
			want := "a value"
			if n != nil && n.props[name] != nil && n.props[name].typ != "" {
				want = typeWant(n.props[name].typ)
			}
			add(path+"/"+escapeToken(name), want+" (required)", "nothing")
		}
	case *kind.AdditionalProperties:
		known := "none"
		if n != nil && len(n.order) > 0 {
			known = strings.Join(n.order, ", ")
		}
		what, whats := "property", "properties"
		if len(ve.InstanceLocation) == 0 {
			what, whats = "parameter", "parameters"
		}
		for _, name := range k.Properties {
			add(path+"/"+escapeToken(name), fmt.Sprintf("only known %s (%s)", whats, known), "an unknown "+what)
		}
	case *kind.Type:
		add(path, strings.Join(mapStrings(k.Want, typeWant), " or "), gotValue(val))
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = gotValue(w)
		}
		add(path, "one of "+strings.Join(want, ", "), gotValue(val))
	case *kind.Const:
		add(path, "exactly "+gotValue(k.Want), gotValue(val))
	case *kind.Minimum:
		add(path, "at least "+ratString(k.Want), gotValue(val))
	case *kind.Maximum:
		add(path, "at most "+ratString(k.Want), gotValue(val))
	case *kind.ExclusiveMinimum:
		add(path, "greater than "+ratString(k.Want), gotValue(val))
	case *kind.ExclusiveMaximum:
		add(path, "less than "+ratString(k.Want), gotValue(val))
	case *kind.MultipleOf:
		add(path, "a multiple of "+ratString(k.Want), gotValue(val))
	case *kind.MinLength:
		add(path, fmt.Sprintf("at least %s", plural(k.Want, "character")), fmt.Sprintf("%s (%s)", gotValue(val), plural(k.Got, "character")))
	case *kind.MaxLength:
		add(path, fmt.Sprintf("at most %s", plural(k.Want, "character")), fmt.Sprintf("%s (%s)", gotValue(val), plural(k.Got, "character")))
	case *kind.Pattern:
		add(path, "a string matching the pattern "+k.Want, gotValue(val))
	case *kind.Format:
		add(path, "a string in the format "+k.Want, gotValue(val))
	case *kind.MinItems:
		add(path, "at least "+plural(k.Want, "item"), plural(k.Got, "item"))
	case *kind.MaxItems:
		add(path, "at most "+plural(k.Want, "item"), plural(k.Got, "item"))
	case *kind.UniqueItems:
		add(path, "unique items", fmt.Sprintf("items %d and %d equal", k.Duplicates[0], k.Duplicates[1]))
	case *kind.FalseSchema:
		add(path, "no value here", gotValue(val))
	default:
		add(path, ve.ErrorKind.LocalizedString(message.NewPrinter(language.English)), gotValue(val))
	}
	return ps
}

// nodeAt returns the schema node of the value at the instance location, or
// nil where the schema does not say.
func (c *Checker) nodeAt(loc []string) *node {
	n := c.root
	for _, tok := range loc {
		switch {
		case n == nil:
			return nil
		case n.typ == "array":
			n = n.items
		case n.props[tok] != nil:
			n = n.props[tok]
		default:
			n = n.addl
		}
	}
	return n
}

func typeWant(t string) string {
	switch t {
	case "object":
		return "an object"
	case "array":
		return "an array"
	case "null":
		return "null"
	}
	return t
}

func mapStrings(s []string, f func(string) string) []string {
	out := make([]string, len(s))
	for i, e := range s {
		out[i] = f(e)
	}
	return out
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// gotValue renders a value as JSON, cut short when long.
func gotValue(v any) string {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false) // show "<" as the model sent it
	if err := e.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	const max = 64
	if len(b) > max {
		cut := max
		for cut > 0 && b[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		return string(b[:cut]) + "…"
	}
	return string(b)
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "a " + fmt.Sprintf("%T", v)
}

// lookup finds the value at a JSON Pointer's tokens.
func lookup(v any, loc []string) (any, bool) {
	for _, tok := range loc {
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[tok]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func pointer(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(escapeToken(tok))
	}
	return b.String()
}

// escapeToken escapes one JSON Pointer reference token (RFC 6901).
func escapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
