package loader

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/beam-agents/toolreg"
)

// Limits on one YAML document, so that hostile input is refused quickly.
const (
	// maxDepth bounds nesting (mappings and lists inside one another). A
	// manifest needs about 10; an array of objects of arrays nests 8 deep.
	maxDepth = 64
	// maxNodes bounds the values of one document after expanding aliases,
	// which is what defeats an alias bomb ("billion laughs").
	maxNodes = 100_000
)

// yamlDoc is one YAML document of a file, decoded as far as it goes, with the
// problems found decoding it. root is nil when the document holds no tool to
// check further.
type yamlDoc struct {
	index int // 0-based document index in the file
	root  *node
	probs []toolreg.Problem
}

// parseYAML splits a YAML file into its documents. A syntax error ends the
// document it is in, not the file: each part of the file between two document
// markers (a line starting with ---) is parsed on its own, so the documents
// after a bad one are still checked.
func parseYAML(file string, src []byte) []yamlDoc {
	var docs []yamlDoc
	for _, part := range splitYAML(src) {
		dec := yaml.NewDecoder(bytes.NewReader(part.text))
		for {
			i := len(docs)
			var doc yaml.Node
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				docs = append(docs, yamlDoc{index: i, probs: []toolreg.Problem{yamlSyntaxProblem(file, part.line, dec, err)}})
				break // the parser cannot go on past a syntax error
			}
			d := yamlDoc{index: i}
			c := &converter{file: file, line: part.line}
			empty := fmt.Sprintf("document %d is empty: a manifest document declares one tool (name, description, params)", i+1)
			if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
				d.probs = append(d.probs, toolreg.Problem{Pos: c.at(&doc), Message: empty})
			} else if root := c.convert(doc.Content[0], 0); c.fatal {
				d.probs = c.probs
			} else if root.kind == kindNull && !root.bad {
				d.probs = append(c.probs, toolreg.Problem{Pos: root.pos, Message: empty})
			} else if root.kind != kindMap {
				d.probs = c.probs
				if !root.bad {
					d.probs = append(d.probs, toolreg.Problem{Pos: root.pos,
						Message: fmt.Sprintf("document %d is %s, not a mapping: a manifest document declares one tool as a mapping with name, description and params", i+1, article(cueKinds[root.kind]))})
				}
			} else {
				d.root, d.probs = root, c.probs
			}
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		docs = append(docs, yamlDoc{probs: []toolreg.Problem{{Pos: toolreg.Pos{File: file},
			Message: "empty file: a YAML manifest declares at least one tool (name, description, params)"}}})
	}
	return docs
}

// yamlPart is a run of lines of a YAML file that starts at a document marker
// (or at the top of the file), and the 0-based line it starts at.
type yamlPart struct {
	line int
	text []byte
}

// splitYAML cuts a YAML file before each line that starts with the document
// marker ---. YAML forbids such a line inside any scalar, so a cut never
// falls inside a value. A part holding only comments, blank lines and
// directives (%YAML) is kept with the part after it.
func splitYAML(src []byte) []yamlPart {
	var parts []yamlPart
	start, startLine, line := 0, 0, 0
	onlyPreamble := true
	for off := 0; off < len(src); {
		end := bytes.IndexByte(src[off:], '\n')
		next := len(src)
		if end >= 0 {
			next = off + end + 1
		}
		l := src[off:next]
		if off > start && isDocMarker(l) && !onlyPreamble {
			parts = append(parts, yamlPart{line: startLine, text: src[start:off]})
			start, startLine, onlyPreamble = off, line, true
		}
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' && t[0] != '%' && !isDocMarker(l) {
			onlyPreamble = false
		}
		off, line = next, line+1
	}
	if start < len(src) || len(parts) == 0 {
		parts = append(parts, yamlPart{line: startLine, text: src[start:]})
	}
	return parts
}

// isDocMarker reports whether a line starts with --- followed by a space, a
// tab or the end of the line.
func isDocMarker(l []byte) bool {
	rest, ok := bytes.CutPrefix(l, []byte("---"))
	return ok && (len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r')
}

// yamlSyntaxProblem turns a yaml.v3 syntax error into a Problem at the token
// the parser could not take. yaml.v3's message names a line only, and not
// always the right one (the line of the enclosing construct, off by one), so
// the position is read from the parser's own marks where they can be had.
func yamlSyntaxProblem(file string, lineOffset int, dec *yaml.Decoder, err error) toolreg.Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	pos := toolreg.Pos{File: file}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, tail, ok := strings.Cut(rest, ": "); ok {
			if line, err := strconv.Atoi(n); err == nil {
				pos.Line, msg = line+lineOffset, tail
			}
		}
	}
	if problem, context, what, ok := parserMarks(dec); ok {
		pos.Line, pos.Col = problem.line+1+lineOffset, problem.column+1
		if what != "" && context != problem {
			msg += fmt.Sprintf(" (%s that starts at %d:%d)", what, context.line+1+lineOffset, context.column+1)
		}
	}
	return toolreg.Problem{Pos: pos, Message: "invalid YAML: " + msg}
}

// yamlMark is a position yaml.v3's parser keeps: byte offset, and 0-based
// line and column (in characters).
type yamlMark struct{ index, line, column int }

// parserMarks reads the problem and context marks, and the context's name
// ("while parsing a flow sequence"), of the parser inside dec
// after a syntax error. yaml.v3 keeps them but does not export them; they are
// read (never written) by reflection, and ok is false when this version of
// yaml.v3 does not have them, so that the error then keeps yaml.v3's line.
func parserMarks(dec *yaml.Decoder) (problem, context yamlMark, what string, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	p := reflect.ValueOf(dec).Elem().FieldByName("parser")
	if !p.IsValid() || p.IsNil() {
		return problem, context, "", false
	}
	yp := p.Elem().FieldByName("parser")
	mark := func(name string) (yamlMark, bool) {
		m := yp.FieldByName(name)
		if !m.IsValid() {
			return yamlMark{}, false
		}
		i, l, c := m.FieldByName("index"), m.FieldByName("line"), m.FieldByName("column")
		if !i.IsValid() || !l.IsValid() || !c.IsValid() {
			return yamlMark{}, false
		}
		return yamlMark{int(i.Int()), int(l.Int()), int(c.Int())}, true
	}
	problem, ok1 := mark("problem_mark")
	context, ok2 := mark("context_mark")
	if c := yp.FieldByName("context"); c.IsValid() && c.Kind() == reflect.String {
		what = c.String()
	}
	return problem, context, what, ok1 && ok2
}

// converter turns a yaml.Node tree into a node tree, expanding aliases within
// the node budget and refusing what JSON cannot hold. Each value it refuses is
// a problem, and a bad node in the tree, and it goes on with the rest; past a
// budget (depth, node count) it stops: the document is hostile.
type converter struct {
	file  string
	line  int // 0-based line of the file the parsed text starts at
	nodes int
	probs []toolreg.Problem
	fatal bool
}

func (c *converter) at(n *yaml.Node) toolreg.Pos {
	return toolreg.Pos{File: c.file, Line: n.Line + c.line, Col: n.Column}
}

// fail records a problem at n and returns the bad node that stands for n.
func (c *converter) fail(n *yaml.Node, format string, args ...any) *node {
	c.probs = append(c.probs, toolreg.Problem{Pos: c.at(n), Message: fmt.Sprintf(format, args...)})
	return &node{kind: kindNull, pos: c.at(n), bad: true}
}

func (c *converter) convert(n *yaml.Node, depth int) *node {
	if c.fatal {
		return &node{kind: kindNull, pos: c.at(n), bad: true}
	}
	if depth > maxDepth {
		c.fatal = true
		return c.fail(n, "nested more than %d levels deep: a manifest is never this deep", maxDepth)
	}
	c.nodes++
	if c.nodes > maxNodes {
		c.fatal = true
		return c.fail(n, "document has more than %d values (after expanding aliases): refusing it as hostile", maxNodes)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return c.fail(n, "unknown alias %q", n.Value)
		}
		out := c.convert(n.Alias, depth+1)
		cp := *out
		cp.pos = c.at(n)
		return &cp
	case yaml.ScalarNode:
		return c.scalar(n)
	case yaml.SequenceNode:
		out := &node{kind: kindList, pos: c.at(n), items: make([]*node, 0, len(n.Content))}
		for _, it := range n.Content {
			out.items = append(out.items, c.convert(it, depth+1))
		}
		return out
	case yaml.MappingNode:
		out := &node{kind: kindMap, pos: c.at(n)}
		var seen map[string]bool
		if len(n.Content) > 16 {
			seen = make(map[string]bool, len(n.Content)/2)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				c.fail(k, "a mapping key must be a plain string, not a %s", yamlKind(k))
				continue
			}
			if k.Tag == "!!merge" {
				c.fail(k, "YAML merge keys (<<) are not supported in manifests: write the keys out")
				continue
			}
			dup := false
			if seen != nil {
				dup = seen[k.Value]
				seen[k.Value] = true
			} else {
				_, _, dup = out.get(k.Value)
			}
			if dup {
				c.fail(k, "key %s is declared twice in this mapping: keep one", quoteShort(k.Value))
				continue
			}
			out.keys = append(out.keys, k.Value)
			out.kpos = append(out.kpos, c.at(k))
			out.vals = append(out.vals, c.convert(v, depth+1))
		}
		return out
	}
	return c.fail(n, "unsupported YAML node")
}

func yamlKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "mapping"
	case yaml.AliasNode:
		return "alias"
	}
	return "scalar"
}

func (c *converter) scalar(n *yaml.Node) *node {
	out := &node{pos: c.at(n)}
	switch n.ShortTag() {
	case "!!str", "!!timestamp":
		out.kind, out.text = kindString, n.Value
		if text, kind, ok := jsonNumber(n.Value); ok && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle|yaml.TaggedStyle) == 0 {
			// A plain number yaml.v3 could not hold in a float64 (1e999999)
			// is still a number, not a string.
			out.kind, out.text = kind, text
		}
	case "!!null":
		out.kind = kindNull
	case "!!bool":
		if n.Value == "true" || n.Value == "false" {
			out.kind, out.text = kindBool, n.Value // as Decode gives them
			return out
		}
		var b bool
		if err := n.Decode(&b); err != nil {
			return c.fail(n, "invalid boolean %s", quoteShort(n.Value))
		}
		out.kind, out.text = kindBool, strconv.FormatBool(b)
	case "!!int":
		if v, err := strconv.ParseInt(n.Value, 10, 64); err == nil && strconv.FormatInt(v, 10) == n.Value {
			out.kind, out.text = kindInt, n.Value // plain decimal: as Decode gives it
			return out
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return c.fail(n, "invalid integer %s", quoteShort(n.Value))
		}
		switch v := v.(type) {
		case int:
			out.kind, out.text = kindInt, strconv.Itoa(v)
		case int64:
			out.kind, out.text = kindInt, strconv.FormatInt(v, 10)
		case uint64:
			out.kind, out.text = kindInt, strconv.FormatUint(v, 10)
		default:
			return c.number(n, out)
		}
	case "!!float":
		return c.number(n, out)
	default:
		return c.fail(n, "unsupported YAML tag %s: a manifest holds only strings, numbers, booleans, null, lists and mappings", short(n.Tag))
	}
	return out
}

// number keeps a number as written, digit for digit, in JSON's form: a bound
// such as 9007199254740993 or 1e400 must not be rounded to a float64 on the
// way. YAML's .inf and .nan, and numbers JSON cannot write (0x10, 0o7, 1_000),
// are refused.
func (c *converter) number(n *yaml.Node, out *node) *node {
	text, kind, ok := jsonNumber(n.Value)
	if !ok {
		if f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			text, kind, ok = strconv.FormatFloat(f, 'g', -1, 64), kindFloat, true
		}
	}
	if !ok {
		var f float64
		if err := n.Decode(&f); err == nil && (math.IsInf(f, 0) || math.IsNaN(f)) {
			return c.fail(n, "%s is not a JSON number: use a finite number", short(n.Value))
		}
		return c.fail(n, "invalid number %s: write it as JSON does (such as 12, -0.5, 1e3)", quoteShort(n.Value))
	}
	if kind == kindFloat && !strings.ContainsAny(text, ".eE") {
		text += ".0" // keep it a float for CUE: 10.0 is not an int
	}
	out.kind, out.text = kind, text
	return out
}

// jsonNumber returns s as a JSON number text, and whether it is an integer,
// when s is written as JSON writes numbers (a leading + is dropped).
func jsonNumber(s string) (string, kind, bool) {
	if s == "" || s[0] != '+' && s[0] != '-' && (s[0] < '0' || s[0] > '9') {
		return "", 0, false // most strings are words: no JSON validation for them
	}
	t := strings.TrimPrefix(s, "+")
	if t == "" || !json.Valid([]byte(t)) || !(t[0] == '-' || (t[0] >= '0' && t[0] <= '9')) {
		return "", 0, false
	}
	if strings.ContainsAny(t, ".eE") {
		return t, kindFloat, true
	}
	return t, kindInt, true
}
