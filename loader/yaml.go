package loader

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
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

// yamlDoc is one YAML document of a file, decoded, or the problem that kept it
// from decoding.
type yamlDoc struct {
	index int // 0-based document index in the file
	root  *node
	prob  *toolreg.Problem
}

// parseYAML splits a YAML file into its documents. A syntax error ends the file:
// the documents before it are returned, then the error.
func parseYAML(file string, src []byte) []yamlDoc {
	var docs []yamlDoc
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for i := 0; ; i++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			p := yamlSyntaxProblem(file, err)
			docs = append(docs, yamlDoc{index: i, prob: &p})
			break
		}
		d := yamlDoc{index: i}
		c := &converter{file: file}
		if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
			d.prob = &toolreg.Problem{Pos: toolreg.Pos{File: file, Line: doc.Line, Col: doc.Column},
				Message: fmt.Sprintf("document %d is empty: a manifest document declares one tool (name, description, params)", i+1)}
		} else if root, err := c.convert(doc.Content[0], 0); err != nil {
			p := *err
			d.prob = &p
		} else if root.kind == kindNull {
			d.prob = &toolreg.Problem{Pos: root.pos,
				Message: fmt.Sprintf("document %d is empty: a manifest document declares one tool (name, description, params)", i+1)}
		} else if root.kind != kindMap {
			d.prob = &toolreg.Problem{Pos: root.pos,
				Message: fmt.Sprintf("document %d is %s, not a mapping: a manifest document declares one tool as a mapping with name, description and params", i+1, article(cueKinds[root.kind]))}
		} else {
			d.root = root
		}
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		docs = append(docs, yamlDoc{prob: &toolreg.Problem{Pos: toolreg.Pos{File: file},
			Message: "empty file: a YAML manifest declares at least one tool (name, description, params)"}})
	}
	return docs
}

// yamlSyntaxProblem turns a yaml.v3 error ("yaml: line 3: did not find ...")
// into a Problem at that line.
func yamlSyntaxProblem(file string, err error) toolreg.Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	pos := toolreg.Pos{File: file}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, tail, ok := strings.Cut(rest, ": "); ok {
			if line, err := strconv.Atoi(n); err == nil {
				pos.Line, msg = line, tail
			}
		}
	}
	return toolreg.Problem{Pos: pos, Message: "invalid YAML: " + msg}
}

// converter turns a yaml.Node tree into a node tree, expanding aliases within
// the node budget and refusing what JSON cannot hold.
type converter struct {
	file  string
	nodes int
}

func (c *converter) at(n *yaml.Node) toolreg.Pos {
	return toolreg.Pos{File: c.file, Line: n.Line, Col: n.Column}
}

func (c *converter) fail(n *yaml.Node, format string, args ...any) *toolreg.Problem {
	return &toolreg.Problem{Pos: c.at(n), Message: fmt.Sprintf(format, args...)}
}

func (c *converter) convert(n *yaml.Node, depth int) (*node, *toolreg.Problem) {
	if depth > maxDepth {
		return nil, c.fail(n, "nested more than %d levels deep: a manifest is never this deep", maxDepth)
	}
	c.nodes++
	if c.nodes > maxNodes {
		return nil, c.fail(n, "document has more than %d values (after expanding aliases): refusing it as hostile", maxNodes)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, c.fail(n, "unknown alias %q", n.Value)
		}
		out, p := c.convert(n.Alias, depth+1)
		if out != nil {
			cp := *out
			cp.pos = c.at(n)
			out = &cp
		}
		return out, p
	case yaml.ScalarNode:
		return c.scalar(n)
	case yaml.SequenceNode:
		out := &node{kind: kindList, pos: c.at(n), items: make([]*node, 0, len(n.Content))}
		for _, it := range n.Content {
			v, p := c.convert(it, depth+1)
			if p != nil {
				return nil, p
			}
			out.items = append(out.items, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := &node{kind: kindMap, pos: c.at(n)}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, c.fail(k, "a mapping key must be a plain string, not a %s", yamlKind(k))
			}
			if k.Tag == "!!merge" {
				return nil, c.fail(k, "YAML merge keys (<<) are not supported in manifests: write the keys out")
			}
			if _, _, dup := out.get(k.Value); dup {
				return nil, c.fail(k, "key %q is declared twice in this mapping: keep one", k.Value)
			}
			val, p := c.convert(v, depth+1)
			if p != nil {
				return nil, p
			}
			out.keys = append(out.keys, k.Value)
			out.kpos = append(out.kpos, c.at(k))
			out.vals = append(out.vals, val)
		}
		return out, nil
	}
	return nil, c.fail(n, "unsupported YAML node")
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

func (c *converter) scalar(n *yaml.Node) (*node, *toolreg.Problem) {
	out := &node{pos: c.at(n)}
	switch n.ShortTag() {
	case "!!str", "!!timestamp":
		out.kind, out.text = kindString, n.Value
	case "!!null":
		out.kind = kindNull
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, c.fail(n, "invalid boolean %q", n.Value)
		}
		out.kind, out.text = kindBool, strconv.FormatBool(b)
	case "!!int":
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, c.fail(n, "invalid integer %q", n.Value)
		}
		switch v := v.(type) {
		case int:
			out.kind, out.text = kindInt, strconv.Itoa(v)
		case int64:
			out.kind, out.text = kindInt, strconv.FormatInt(v, 10)
		case uint64:
			out.kind, out.text = kindInt, strconv.FormatUint(v, 10)
		case float64:
			return c.float(n, out, v)
		default:
			return nil, c.fail(n, "invalid integer %q", n.Value)
		}
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, c.fail(n, "invalid number %q", n.Value)
		}
		return c.float(n, out, f)
	default:
		return nil, c.fail(n, "unsupported YAML tag %s: a manifest holds only strings, numbers, booleans, null, lists and mappings", n.Tag)
	}
	return out, nil
}

func (c *converter) float(n *yaml.Node, out *node, f float64) (*node, *toolreg.Problem) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, c.fail(n, "%s is not a JSON number: use a finite number", n.Value)
	}
	out.kind, out.text = kindFloat, strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(out.text, ".eE") {
		out.text += ".0" // keep it a float for CUE: 10.0 is not an int
	}
	return out, nil
}
