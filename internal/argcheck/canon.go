package argcheck

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/beam-agents/toolreg/canonjson"
)

// canonPlan rewrites valid arguments as normalized canonical JSON in one pass
// over their text, without a Go type: the fast path of Canonical, as Plan is
// of decoding. It takes what it is sure of and leaves the rest to Check.
type canonPlan struct {
	root *canonNode
}

type canonNode struct {
	kind   scalarKind // for scalars; 0 for objects, arrays and maps
	scalar scalarPlan

	// objects with properties
	props    []canonProp // sorted by name, as canonical JSON orders them
	isObject bool

	// objects with only additionalProperties
	values *canonNode

	// arrays
	items  *canonNode
	count  limits // minItems, maxItems
	unique bool

	slow bool
}

type canonProp struct {
	name     string
	key      []byte // the name as canonical JSON with the colon: "name":
	required bool
	def      []byte // the normalized default as canonical JSON; nil when none
	node     *canonNode
}

var scalarTypes = map[string]reflect.Type{
	"string":  reflect.TypeFor[string](),
	"integer": reflect.TypeFor[int64](),
	"number":  reflect.TypeFor[float64](),
	"boolean": reflect.TypeFor[bool](),
}

// canonPlan returns the plan, or nil when the schema's root is not a closed
// object the plan understands.
func (c *Checker) canonPlan() *canonPlan {
	root, ok := c.canonNode(c.root, c.schema, 0)
	if !ok || !root.isObject {
		return nil
	}
	return &canonPlan{root: root}
}

func (c *Checker) canonNode(n *node, sch *jsonschema.Schema, depth int) (*canonNode, bool) {
	if depth > maxPlanDepth || n.exotic || sch == nil {
		return nil, false
	}
	cn := &canonNode{}
	switch n.typ {
	case "object":
		if n.enum != nil {
			return nil, false
		}
		if n.addl != nil {
			ap, _ := sch.AdditionalProperties.(*jsonschema.Schema)
			if len(n.props) > 0 || ap == nil {
				return nil, false
			}
			v, ok := c.canonNode(n.addl, ap, depth+1)
			if !ok {
				return nil, false
			}
			cn.values = v
			return cn, true
		}
		if !n.closed || len(n.props) > 64 {
			return nil, false
		}
		cn.isObject = true
		for _, name := range n.order { // sorted
			pn := n.props[name]
			child, ok := c.canonNode(pn, sch.Properties[name], depth+1)
			if !ok {
				return nil, false
			}
			p := canonProp{name: name, required: n.required[name], node: child}
			p.key = append(canonjson.AppendString(nil, name), ':')
			if pn.hasDefault {
				text, err := json.Marshal(pn.def)
				if err != nil {
					return nil, false
				}
				var t transcoder
				s := scanner{b: text}
				if !t.value(child, &s) || s.i != len(text) {
					return nil, false // a default the plan cannot vouch for
				}
				p.def = t.out
			}
			cn.props = append(cn.props, p)
		}
	case "array":
		if n.items == nil || n.enum != nil || n.format != "" {
			return nil, false
		}
		child, ok := c.canonNode(n.items, itemsSchema(sch), depth+1)
		if !ok {
			return nil, false
		}
		cn.items, cn.count, cn.unique = child, n.itemCount, n.unique
		// Equal canonical text means equal JSON only for strings and booleans
		// ("1" and "1.0" are one number); other unique arrays go to Check.
		cn.slow = n.unique && child.kind != kString && child.kind != kBool
	default:
		t := scalarTypes[n.typ]
		if t == nil {
			return nil, false
		}
		sp, ok := c.scalarPlan(t, n, sch)
		if !ok {
			return nil, false
		}
		cn.kind, cn.scalar = sp.kind, sp
	}
	return cn, true
}

// Canonical validates args and returns them normalized (coerced, nulls for
// optional members dropped, defaults applied) as canonical JSON: keys sorted,
// no spaces, UTF-8 kept, integers as written, other numbers as Python's repr
// writes floats. It is what Check followed by canonjson.Marshal gives,
// taken in one pass when the arguments allow it; ok is false when the caller
// must take that path instead.
func (c *Checker) Canonical(args []byte) (out []byte, ok bool) {
	if c.canon == nil {
		return nil, false
	}
	t := transcoder{out: make([]byte, 0, len(args)+16)}
	s := scanner{b: args}
	s.ws()
	if s.i == len(s.b) || s.literal("null") {
		ok = t.emit(c.canon.root, 0, len(t.out), nil) // no arguments: {}
	} else {
		ok = t.value(c.canon.root, &s)
	}
	s.ws()
	if !ok || s.i != len(s.b) {
		return nil, false
	}
	return t.out, true
}

// transcoder writes canonical JSON. Object members are first written in the
// order they come, as bare values, then rewritten in key order with their
// keys; tmp holds the bare values meanwhile.
type transcoder struct {
	out, tmp []byte
	spans    []span
}

type span struct {
	prop       int // index into canonNode.props
	start, end int // of the value, relative to the object's start in out
}

func (t *transcoder) value(n *canonNode, s *scanner) bool {
	switch {
	case n.slow:
		return false
	case n.isObject:
		return t.object(n, s)
	case n.values != nil:
		return t.mapObject(n, s)
	case n.items != nil:
		return t.array(n, s)
	}
	return t.scalar(n, s)
}

func (t *transcoder) object(n *canonNode, s *scanner) bool {
	start := len(t.out)
	first := len(t.spans)
	var present, nulled uint64
	more, ok := s.open('{', '}')
	for ; more; more, ok = s.next('}') {
		key, isKey := s.key()
		if !isKey || !s.colon() {
			return false
		}
		pi := n.prop(key)
		if pi < 0 || present&(1<<pi) != 0 {
			return false // unknown or repeated key
		}
		present |= 1 << pi
		p := &n.props[pi]
		if s.literal("null") {
			if p.required {
				return false
			}
			nulled |= 1 << pi // null for an optional member means absent
			continue
		}
		vs := len(t.out)
		if !t.value(p.node, s) {
			return false
		}
		t.spans = append(t.spans, span{prop: pi, start: vs - start, end: len(t.out) - start})
	}
	if !ok {
		return false
	}
	ok = t.emit(n, present&^nulled, start, t.spans[first:])
	t.spans = t.spans[:first]
	return ok
}

// emit rewrites the bare values written since start as the object, keys in
// order, with the defaults of absent members.
func (t *transcoder) emit(n *canonNode, given uint64, start int, spans []span) bool {
	t.tmp = append(t.tmp[:0], t.out[start:]...)
	t.out = append(t.out[:start], '{')
	comma := false
	for i := range n.props {
		p := &n.props[i]
		var val []byte
		if given&(1<<i) != 0 {
			for _, sp := range spans {
				if sp.prop == i {
					val = t.tmp[sp.start:sp.end]
					break
				}
			}
		} else if p.required {
			return false
		} else if p.def != nil {
			val = p.def
		} else {
			continue
		}
		if comma {
			t.out = append(t.out, ',')
		}
		comma = true
		t.out = append(t.out, p.key...)
		t.out = append(t.out, val...)
	}
	t.out = append(t.out, '}')
	return true
}

func (n *canonNode) prop(key []byte) int {
	// string(k) inside the comparison allocated on every probe; the key's
	// bytes are only compared, never kept.
	k := unsafeString(key)
	i, ok := slices.BinarySearchFunc(n.props, k, func(p canonProp, k string) int {
		return strings.Compare(p.name, k)
	})
	if !ok {
		return -1
	}
	return i
}

// mapObject writes an object of additional properties, keys sorted.
func (t *transcoder) mapObject(n *canonNode, s *scanner) bool {
	start := len(t.out)
	type member struct {
		key        string
		start, end int
	}
	var members []member
	more, ok := s.open('{', '}')
	for ; more; more, ok = s.next('}') {
		key, isKey := s.key()
		if !isKey || !s.colon() {
			return false
		}
		vs := len(t.out)
		if !t.value(n.values, s) {
			return false
		}
		members = append(members, member{string(key), vs - start, len(t.out) - start})
	}
	if !ok {
		return false
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	for i := 1; i < len(members); i++ {
		if members[i].key == members[i-1].key {
			return false // a repeated key
		}
	}
	t.tmp = append(t.tmp[:0], t.out[start:]...)
	t.out = append(t.out[:start], '{')
	for i, m := range members {
		if i > 0 {
			t.out = append(t.out, ',')
		}
		// Keys from scanner.key are plain ASCII with no quote or backslash.
		t.out = append(t.out, '"')
		t.out = append(t.out, m.key...)
		t.out = append(t.out, '"', ':')
		t.out = append(t.out, t.tmp[m.start:m.end]...)
	}
	t.out = append(t.out, '}')
	return true
}

func (t *transcoder) array(n *canonNode, s *scanner) bool {
	more, ok := s.open('[', ']')
	if !ok {
		return false
	}
	t.out = append(t.out, '[')
	var starts [maxUniqueScan + 1]int // where each item begins, for unique
	count := 0
	for ; more; more, ok = s.next(']') {
		if count > 0 {
			t.out = append(t.out, ',')
		}
		if count < len(starts) {
			starts[count] = len(t.out)
		}
		if !t.value(n.items, s) {
			return false
		}
		count++
	}
	if !ok {
		return false
	}
	if !n.count.allow(count) {
		return false
	}
	if n.unique && count > 1 {
		if count > maxUniqueScan {
			return false
		}
		end := func(i int) int {
			if i+1 < count {
				return starts[i+1] - 1 // before the comma
			}
			return len(t.out)
		}
		for i := 0; i < count; i++ {
			for j := i + 1; j < count; j++ {
				if string(t.out[starts[i]:end(i)]) == string(t.out[starts[j]:end(j)]) {
					return false
				}
			}
		}
	}
	t.out = append(t.out, ']')
	return true
}

func (t *transcoder) scalar(n *canonNode, s *scanner) bool {
	sp := &n.scalar
	if sp.slow {
		return false
	}
	switch sp.kind {
	case kString:
		v, ok := s.str()
		if !ok || !sp.stringOK(v) {
			return false
		}
		t.out = canonjson.AppendString(t.out, v)
	case kBool:
		v, ok := sp.boolean(s)
		if !ok {
			return false
		}
		t.out = strconv.AppendBool(t.out, v)
	case kInt:
		start := s.i
		digits, ok := sp.integer(s)
		if !ok {
			return false
		}
		if _, ok := sp.intValue(digits); !ok {
			return false
		}
		if digits == "-0" && s.b[start] == '-' && strings.ContainsRune(unsafeString(s.b[start:s.i]), '.') {
			digits = "0" // -0.0 is the integer 0; a plain -0 stays as written
		}
		t.out = append(t.out, digits...)
	case kFloat64:
		start := s.i
		v, ok := sp.number(s)
		if !ok || !sp.floatOK(v) {
			return false
		}
		tok := s.b[start:s.i]
		switch {
		case tok[0] == 't':
			t.out = append(t.out, '1')
		case tok[0] == 'f':
			t.out = append(t.out, '0')
		case tok[0] == '"':
			// A coerced string: Check writes strconv's shortest 'g' form.
			var buf [32]byte
			t.out, ok = canonjson.AppendNumber(t.out, unsafeString(strconv.AppendFloat(buf[:0], v, 'g', -1, 64)))
		default:
			t.out, ok = canonjson.AppendNumber(t.out, unsafeString(tok))
		}
		if !ok {
			return false
		}
	default:
		return false
	}
	return true
}
