package loader

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/beam-agents/toolreg"
)

// MarshalYAML writes s as a YAML manifest document, the form Load reads
// back as s (its Pos aside): keys in the order the manifest format lists
// them, params and properties in s's order, numbers digit for digit as s
// holds them. header, when not empty, is written first as comment lines.
// It is how `toolreg pin` writes the manifests of remote tools; a comment a
// person added to a file is not kept when it is written again.
//
// A Spec whose Default or Enum holds a value JSON cannot encode is refused.
func MarshalYAML(s *toolreg.Spec, header string) ([]byte, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	w := &writer{}
	w.str(root, "name", s.Name)
	w.str(root, "description", s.Description)
	if s.SideEffect {
		w.pair(root, "side_effect", boolNode(true))
	}
	if s.Strict {
		w.pair(root, "strict", boolNode(true))
	}
	if r := s.Remote; r != nil {
		m := &yaml.Node{Kind: yaml.MappingNode}
		w.str(m, "server", r.Server)
		w.str(m, "tool", r.Tool)
		if r.Title != "" {
			w.str(m, "title", r.Title)
		}
		if r.ReadOnlyHint {
			w.pair(m, "read_only_hint", boolNode(true))
		}
		w.pair(root, "remote", m)
	}
	if len(s.Params) > 0 {
		w.pair(root, "params", w.params(s.Params))
	}
	if s.Returns != nil {
		w.pair(root, "returns", w.schema(s.Returns, false))
	}
	if a := s.Approval; a != nil {
		w.str(root, "approval", "required")
		if a.Reason != "" {
			w.str(root, "approval_reason", a.Reason)
		}
		if a.Timeout > 0 {
			w.str(root, "approval_timeout", a.Timeout.String())
		}
	}
	if len(s.Tags) > 0 {
		w.pair(root, "tags", w.strings(s.Tags))
	}
	if len(s.Keywords) > 0 {
		w.pair(root, "keywords", w.strings(s.Keywords))
	}
	if len(s.Scopes) > 0 {
		w.pair(root, "scopes", w.strings(s.Scopes))
	}
	if b := s.Budgets; b != nil {
		m := &yaml.Node{Kind: yaml.MappingNode}
		if b.PerActivation > 0 {
			w.pair(m, toolreg.BudgetPerActivation, numberNode(json.Number(strconv.Itoa(b.PerActivation))))
		}
		if e := b.PerEntity; e != nil {
			pe := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
			w.pair(pe, "calls", numberNode(json.Number(strconv.Itoa(e.Calls))))
			w.str(pe, "window", e.Window.String())
			w.pair(m, toolreg.BudgetPerEntity, pe)
		}
		if len(m.Content) > 0 {
			w.pair(root, "budgets", m)
		}
	}
	if a := s.Annotations; a != nil {
		m := &yaml.Node{Kind: yaml.MappingNode}
		if a.Title != "" {
			w.str(m, "title", a.Title)
		}
		for _, h := range []struct {
			k string
			v *bool
		}{{"destructiveHint", a.DestructiveHint}, {"idempotentHint", a.IdempotentHint}, {"openWorldHint", a.OpenWorldHint}} {
			if h.v != nil {
				w.pair(m, h.k, boolNode(*h.v))
			}
		}
		if len(m.Content) > 0 {
			w.pair(root, "annotations", m)
		}
	}
	if w.err != nil {
		return nil, fmt.Errorf("loader: writing %q as YAML: %w", s.Name, w.err)
	}
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		if header == "" {
			break
		}
		b.WriteString(strings.TrimRight("# "+line, " "))
		b.WriteByte('\n')
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("loader: writing %q as YAML: %w", s.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

type writer struct{ err error }

func (w *writer) pair(m *yaml.Node, k string, v *yaml.Node) {
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, v)
}

func (w *writer) str(m *yaml.Node, k, v string) { w.pair(m, k, strNode(v)) }

// strNode is a string scalar: a literal block when it has several lines (a
// description, as a person would write it), otherwise what yaml.v3 picks,
// quoted where the text would read as another type.
func strNode(v string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
	switch {
	case strings.Contains(v, "\n") && literalSafe(v):
		n.Style = yaml.LiteralStyle
	case yaml11Scalar[strings.ToLower(v)]:
		// yaml.v3 leaves these plain, as YAML 1.2 reads them as strings; a
		// YAML 1.1 reader (cue vet's included, in places) reads a boolean.
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// yaml11Scalar are the plain scalars YAML 1.1 reads as a boolean or null.
var yaml11Scalar = map[string]bool{"y": true, "n": true, "yes": true, "no": true, "on": true, "off": true, "true": true, "false": true, "null": true, "~": true}

// literalSafe reports whether v reads back from a literal block as itself:
// no trailing spaces on a line, no tabs or carriage returns, which a block
// scalar changes or refuses.
func literalSafe(v string) bool {
	if strings.ContainsAny(v, "\r\t") || strings.HasPrefix(v, " ") || strings.HasPrefix(v, "\n") {
		return false
	}
	for _, line := range strings.Split(v, "\n") {
		if strings.HasSuffix(line, " ") {
			return false
		}
	}
	return true
}

func boolNode(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}

func (w *writer) strings(ss []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, s := range ss {
		n.Content = append(n.Content, strNode(s))
	}
	return n
}

func (w *writer) params(ps []*toolreg.Param) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, p := range ps {
		n := w.schema(&p.Schema, true)
		if p.Optional {
			w.pair(n, "required", boolNode(false))
		}
		w.pair(m, p.Name, n)
	}
	return m
}

func (w *writer) schema(s *toolreg.Schema, param bool) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	w.str(m, "type", string(s.Type))
	if s.Description != "" {
		w.str(m, "description", s.Description)
	}
	if s.HasDefault {
		w.pair(m, "default", w.value(s.Default))
	}
	if s.Enum != nil {
		n := w.value(s.Enum)
		n.Style = yaml.FlowStyle
		w.pair(m, "enum", n)
	}
	for _, k := range []struct {
		key string
		v   json.Number
	}{{"minimum", s.Minimum}, {"maximum", s.Maximum}, {"exclusiveMinimum", s.ExclusiveMinimum}, {"exclusiveMaximum", s.ExclusiveMaximum}, {"multipleOf", s.MultipleOf}} {
		if k.v != "" {
			w.pair(m, k.key, numberNode(k.v))
		}
	}
	for _, k := range []struct {
		key string
		v   *int
	}{{"minLength", s.MinLength}, {"maxLength", s.MaxLength}} {
		if k.v != nil {
			w.pair(m, k.key, numberNode(json.Number(strconv.Itoa(*k.v))))
		}
	}
	if s.Pattern != "" {
		w.str(m, "pattern", s.Pattern)
	}
	if s.Format != "" {
		w.str(m, "format", s.Format)
	}
	for _, k := range []struct {
		key string
		v   *int
	}{{"minItems", s.MinItems}, {"maxItems", s.MaxItems}} {
		if k.v != nil {
			w.pair(m, k.key, numberNode(json.Number(strconv.Itoa(*k.v))))
		}
	}
	if s.UniqueItems {
		w.pair(m, "uniqueItems", boolNode(true))
	}
	if s.Items != nil {
		w.pair(m, "items", w.schema(s.Items, false))
	}
	if len(s.Properties) > 0 {
		w.pair(m, "properties", w.params(s.Properties))
	}
	if s.AdditionalProperties != nil {
		w.pair(m, "additionalProperties", w.schema(s.AdditionalProperties, false))
	}
	return m
}

func numberNode(n json.Number) *yaml.Node {
	tag := "!!int"
	if strings.ContainsAny(string(n), ".eE") {
		tag = "!!float"
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: string(n)}
}

// value writes a JSON value as a Spec holds it (decoded with UseNumber).
func (w *writer) value(v any) *yaml.Node {
	switch v := v.(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	case bool:
		return boolNode(v)
	case json.Number:
		return numberNode(v)
	case string:
		return strNode(v)
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, x := range v {
			n.Content = append(n.Content, w.value(x))
		}
		return n
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			w.pair(n, k, w.value(v[k]))
		}
		return n
	}
	if w.err == nil {
		w.err = fmt.Errorf("a default or enum value of type %T, which is no JSON value", v)
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
}
