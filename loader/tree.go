package loader

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"

	"github.com/beam-agents/toolreg"
)

// kind is the JSON kind of a node.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindInt
	kindFloat
	kindString
	kindList
	kindMap
)

// node is one manifest value with its source position: the common form of a
// YAML document and of a CUE tool, so that decoding into a Spec, and finding
// where a problem is, work the same for both.
type node struct {
	kind kind
	pos  toolreg.Pos
	// text is a scalar's value: "true"/"false" for a bool, the JSON number
	// text of an int or float, the string itself for a string.
	text  string
	keys  []string
	kpos  []toolreg.Pos // where each key is written
	vals  []*node       // mapping values, parallel to keys
	items []*node       // list items
	// bad marks a CUE value that is in error, whose kind and text are not
	// known: the value as written is not at hand.
	bad bool
}

// get returns the value under key and where the key is written.
func (n *node) get(key string) (*node, toolreg.Pos, bool) {
	if n == nil || n.kind != kindMap {
		return nil, toolreg.Pos{}, false
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i], n.kpos[i], true
		}
	}
	return nil, toolreg.Pos{}, false
}

// lookup follows path (CUE error path elements, labels possibly quoted) from
// n. It returns the node at path, or nil when the path leads nowhere, and the
// position of the deepest node it reached: for a mapping entry, the key's
// position, which is what an editor jumps to.
func (n *node) lookup(path []string) (*node, toolreg.Pos) {
	var pos toolreg.Pos
	if n != nil {
		pos = n.pos
	}
	cur := n
	for _, el := range path {
		if cur == nil {
			return nil, pos
		}
		switch cur.kind {
		case kindMap:
			v, kp, ok := cur.get(unquoteLabel(el))
			if !ok {
				return nil, pos
			}
			cur, pos = v, kp
		case kindList:
			i, err := strconv.Atoi(el)
			if err != nil || i < 0 || i >= len(cur.items) {
				return nil, pos
			}
			cur = cur.items[i]
			pos = cur.pos
		default:
			return nil, pos
		}
	}
	return cur, pos
}

// unquoteLabel turns a CUE path element back into the key it names: CUE quotes
// labels that are not identifiers ("my-key").
func unquoteLabel(el string) string {
	if strings.HasPrefix(el, `"`) {
		if u, err := strconv.Unquote(el); err == nil {
			return u
		}
	}
	return el
}

// value returns the node as encoding/json decodes JSON into any with UseNumber.
func (n *node) value() any {
	return n.convert(func(n *node) any { return json.Number(n.text) })
}

// goValue returns the node as a Go value for cue.Context.Encode, for
// validation against the schema: like value, but with numbers typed, so that
// CUE tells an int (10) from a float (10.0).
func (n *node) goValue() any {
	return n.convert(func(n *node) any {
		if n.kind == kindFloat {
			f, err := strconv.ParseFloat(n.text, 64)
			if err != nil {
				// Beyond float64 (1e400): the loader's own rule refuses it;
				// the schema sees a number.
				return 0.0
			}
			return f
		}
		if i, err := strconv.ParseInt(n.text, 10, 64); err == nil {
			return i
		}
		if i, ok := new(big.Int).SetString(n.text, 10); ok {
			return i
		}
		return n.text // not reached: the text came from a decoded integer
	})
}

// convert returns the node as a Go value of encoding/json's kinds, with each
// number made by number.
func (n *node) convert(number func(*node) any) any {
	switch n.kind {
	case kindBool:
		return n.text == "true"
	case kindInt, kindFloat:
		return number(n)
	case kindString:
		return n.text
	case kindList:
		l := make([]any, len(n.items))
		for i, it := range n.items {
			l[i] = it.convert(number)
		}
		return l
	case kindMap:
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			if n.vals[i].bad {
				continue // refused when decoded; its problem is said
			}
			m[k] = n.vals[i].convert(number)
		}
		return m
	}
	return nil
}

// writeShape writes a text that two nodes share exactly when they hold the same
// keys, in the same order, with values of the same kinds and texts: when the
// schema says the same of both. Positions are left out.
func (n *node) writeShape(b *strings.Builder) {
	b.WriteByte('0' + byte(n.kind))
	if n.bad {
		b.WriteByte('!')
	}
	switch n.kind {
	case kindList:
		b.WriteString(strconv.Itoa(len(n.items)))
		b.WriteByte('[')
		for _, it := range n.items {
			it.writeShape(b)
		}
		b.WriteByte(']')
	case kindMap:
		b.WriteString(strconv.Itoa(len(n.keys)))
		b.WriteByte('{')
		for i, k := range n.keys {
			writeQuoted(b, k)
			n.vals[i].writeShape(b)
		}
		b.WriteByte('}')
	default:
		writeQuoted(b, n.text)
	}
}

// paramShape is shape, except that the text of a string description is left
// out wherever a schema sits (the param itself, its items, its
// additionalProperties, each of its properties): #Schema takes any string
// there, so params that differ only in what they say of themselves share
// the schema's verdict, and one is checked for all.
func (n *node) paramShape() string {
	var b strings.Builder
	n.writeSchemaShape(&b)
	return b.String()
}

// describedMarker stands for a string description's text; writeShape never
// writes it, as each value it writes begins with a digit.
const describedMarker = "~s"

func (n *node) writeSchemaShape(b *strings.Builder) {
	if n.kind != kindMap || n.bad {
		n.writeShape(b)
		return
	}
	b.WriteByte('0' + byte(n.kind))
	b.WriteString(strconv.Itoa(len(n.keys)))
	b.WriteByte('{')
	for i, k := range n.keys {
		writeQuoted(b, k)
		v := n.vals[i]
		switch {
		case k == "description" && v.kind == kindString && !v.bad:
			b.WriteString(describedMarker)
		case k == "items" || k == "additionalProperties":
			v.writeSchemaShape(b)
		case k == "properties" && v.kind == kindMap && !v.bad:
			b.WriteByte('0' + byte(v.kind))
			b.WriteString(strconv.Itoa(len(v.keys)))
			b.WriteByte('{')
			for j, pk := range v.keys {
				writeQuoted(b, pk)
				v.vals[j].writeSchemaShape(b)
			}
			b.WriteByte('}')
		default:
			v.writeShape(b)
		}
	}
	b.WriteByte('}')
}

// toolShape is shape for a tool without its params, except that the texts
// #Tool constrains alone, and the loader can check as CUE would, are left
// out: a name that matches #Tool's pattern, a description that is a string
// and not empty, an annotations title that is a string. Tools that differ
// only in those share the schema's verdict.
func (n *node) toolShape() string {
	var b strings.Builder
	if n.kind != kindMap || n.bad {
		n.writeShape(&b)
		return b.String()
	}
	b.WriteByte('0' + byte(n.kind))
	b.WriteString(strconv.Itoa(len(n.keys)))
	b.WriteByte('{')
	for i, k := range n.keys {
		writeQuoted(&b, k)
		v := n.vals[i]
		plain := v.kind == kindString && !v.bad
		switch {
		case k == "name" && plain && validName(v.text, false):
			b.WriteString(describedMarker)
		case k == "description" && plain && v.text != "":
			b.WriteString(describedMarker)
		case k == "annotations" && v.kind == kindMap && !v.bad:
			b.WriteByte('0' + byte(v.kind))
			b.WriteString(strconv.Itoa(len(v.keys)))
			b.WriteByte('{')
			for j, ak := range v.keys {
				writeQuoted(&b, ak)
				if av := v.vals[j]; ak == "title" && av.kind == kindString && !av.bad {
					b.WriteString(describedMarker)
				} else {
					av.writeShape(&b)
				}
			}
			b.WriteByte('}')
		default:
			v.writeShape(&b)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// writeQuoted writes strconv.Quote(s) without making the string: plain
// printable ASCII, which keys and most values are, is quoted as it is.
func writeQuoted(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			b.WriteString(strconv.Quote(s))
			return
		}
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}
