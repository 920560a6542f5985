package argcheck

import (
	"encoding"
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/beam-agents/toolreg/internal/jsonscan"
)

// Plan decodes a tool's arguments straight into one Go struct type while it
// validates them, for the common call: a JSON object whose values have their
// declared types or coerce simply. It is built once per (schema, type) by
// Checker.Plan and is safe for concurrent use.
//
// Plan.Decode either succeeds, and then its result is the one Check plus
// encoding/json would give, or it reports false and the caller takes the
// reference path (Check, then json.Unmarshal), which also explains the
// problems. Decode reports false for anything it is not sure of: exponents in
// integers, escaped or repeated keys, a broken constraint, and every kind of
// invalid input.
type Plan struct {
	root *objectPlan
}

// objectPlan reads a JSON object into a struct.
type objectPlan struct {
	fields []fieldPlan
}

type fieldPlan struct {
	name     string // the JSON name
	offset   uintptr
	required bool
	def      []byte // the default as JSON text; nil when none
	val      *valuePlan
}

type valueKind uint8

const (
	vScalar valueKind = iota + 1
	vPtr
	vSlice
	vStruct
	vMap
)

// valuePlan reads one JSON value into a Go value of type typ.
type valuePlan struct {
	kind   valueKind
	typ    reflect.Type
	scalar scalarPlan  // vScalar
	elem   *valuePlan  // vPtr, vSlice (items), vMap (values)
	obj    *objectPlan // vStruct

	count   limits // vSlice: minItems, maxItems
	unique  bool
	strings bool // vSlice of a string kind: the one-allocation path
	slow    bool // a keyword the plan does not check here
}

type scalarKind uint8

const (
	kString scalarKind = iota + 1
	kInt
	kUint
	kFloat64
	kBool
)

// scalarPlan says how to read and check one scalar value.
type scalarPlan struct {
	kind   scalarKind
	bits   int  // for kInt and kUint: 8, 16, 32 or 64
	slow   bool // a keyword the plan does not check (a float enum, "regex" format ...)
	strict bool // coerce nothing

	// strings
	length  limits // minLength, maxLength
	re      *regexp.Regexp
	enumStr map[string]bool
	format  func(any) error // the validator's check of the format keyword

	// integers: inclusive bounds, already tightened from exclusive ones
	lo, hi     int64
	hasLo      bool
	hasHi      bool
	multipleOf int64 // 0 when unset
	enumInt    map[int64]bool

	// numbers: each bound rounded to a float64
	fmin, fmax, fxmin, fxmax float64
	fbounds                  uint8 // bit 1 min, 2 max, 4 exclusive min, 8 exclusive max
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// maxPlanDepth bounds how deep a plan follows nested types.
const maxPlanDepth = 16

// Plan returns a decoder of the arguments into values of struct type t, or
// nil when t or the schema has a shape the plan does not handle (float32,
// custom unmarshalers, embedded structs, fields that are no param, schema
// keywords toolreg does not render ...); then every call takes the reference
// path.
//
// Plans are built once per type and shared: a *Plan is safe for concurrent
// use.
func (c *Checker) Plan(t reflect.Type) *Plan { return c.planFor(t) }

func (c *Checker) buildPlan(t reflect.Type) *Plan {
	if t.Kind() != reflect.Struct || implementsUnmarshaler(t) {
		return nil
	}
	obj, ok := c.objectPlan(t, c.root, c.schema, 0)
	if !ok {
		return nil
	}
	return &Plan{root: obj}
}

func (c *Checker) objectPlan(t reflect.Type, n *node, sch *jsonschema.Schema, depth int) (*objectPlan, bool) {
	if n.typ != "object" || !n.closed || n.addl != nil || n.exotic || n.enum != nil || len(n.props) > 64 || sch == nil {
		return nil, false
	}
	p := &objectPlan{}
	seen := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		if sf.Anonymous {
			return nil, false
		}
		name, ok := plainJSONName(sf)
		if !ok {
			return nil, false
		}
		pn := n.props[name]
		if pn == nil || seen[name] {
			return nil, false
		}
		seen[name] = true
		val, ok := c.valuePlan(sf.Type, pn, sch.Properties[name], depth+1)
		if !ok {
			return nil, false
		}
		f := fieldPlan{name: name, offset: sf.Offset, required: n.required[name], val: val}
		if pn.hasDefault {
			def, err := json.Marshal(pn.def)
			if err != nil {
				return nil, false
			}
			f.def = def
		}
		p.fields = append(p.fields, f)
	}
	if len(seen) != len(n.props) {
		return nil, false // a param with no field: the reference path decides
	}
	return p, true
}

func (c *Checker) valuePlan(t reflect.Type, n *node, sch *jsonschema.Schema, depth int) (*valuePlan, bool) {
	if depth > maxPlanDepth || n.exotic || sch == nil || implementsUnmarshaler(t) {
		return nil, false
	}
	vp := &valuePlan{typ: t}
	switch t.Kind() {
	case reflect.Pointer:
		elem, ok := c.valuePlan(t.Elem(), n, sch, depth+1)
		if !ok || elem.kind == vPtr {
			return nil, false
		}
		vp.kind, vp.elem = vPtr, elem
	case reflect.Slice:
		if n.typ != "array" || n.items == nil {
			return nil, false
		}
		elem, ok := c.valuePlan(t.Elem(), n.items, itemsSchema(sch), depth+1)
		if !ok {
			return nil, false
		}
		vp.kind, vp.elem = vSlice, elem
		vp.count, vp.unique = n.itemCount, n.unique
		// Equal scalars are equal JSON values; for composite items the
		// validator's notion of equality is left to it.
		vp.slow = n.enum != nil || n.format != "" || n.unique && elem.kind != vScalar
		vp.strings = elem.kind == vScalar && elem.scalar.kind == kString
	case reflect.Struct:
		obj, ok := c.objectPlan(t, n, sch, depth)
		if !ok {
			return nil, false
		}
		vp.kind, vp.obj = vStruct, obj
	case reflect.Map:
		ap, _ := sch.AdditionalProperties.(*jsonschema.Schema)
		if n.typ != "object" || n.addl == nil || ap == nil || len(n.props) > 0 || n.enum != nil ||
			t.Key().Kind() != reflect.String || implementsUnmarshaler(t.Key()) {
			return nil, false
		}
		elem, ok := c.valuePlan(t.Elem(), n.addl, ap, depth+1)
		if !ok {
			return nil, false
		}
		vp.kind, vp.elem = vMap, elem
	default:
		sp, ok := c.scalarPlan(t, n, sch)
		if !ok {
			return nil, false
		}
		vp.kind, vp.scalar = vScalar, sp
	}
	return vp, true
}

// itemsSchema returns the validator's schema of an array's items, under
// either draft's keyword; nil when there is none.
func itemsSchema(sch *jsonschema.Schema) *jsonschema.Schema {
	if sch.Items2020 != nil {
		return sch.Items2020
	}
	items, _ := sch.Items.(*jsonschema.Schema)
	return items
}

// plainJSONName returns the field's JSON name, refusing tag options that
// change decoding (",string").
func plainJSONName(sf reflect.StructField) (string, bool) {
	tag, ok := sf.Tag.Lookup("json")
	if !ok {
		return sf.Name, true
	}
	name, opts := tag, ""
	for i := 0; i < len(tag); i++ {
		if tag[i] == ',' {
			name, opts = tag[:i], tag[i+1:]
			break
		}
	}
	if name == "-" && opts == "" {
		return "", false
	}
	if opts != "" && opts != "omitempty" && opts != "omitzero" {
		return "", false
	}
	if name == "" {
		name = sf.Name
	}
	return name, true
}

func implementsUnmarshaler(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(unmarshalerType) || pt.Implements(unmarshalerType) ||
		t.Implements(textUnmarshalerType) || pt.Implements(textUnmarshalerType)
}

func (c *Checker) scalarPlan(t reflect.Type, n *node, sch *jsonschema.Schema) (scalarPlan, bool) {
	sp := scalarPlan{strict: c.strict}
	if n.multipleOf != nil && n.typ != "integer" {
		sp.slow = true
	}
	if n.format != "" {
		// The validator's own format check, so that both paths agree; a
		// format it does not know asserts nothing. "regex" depends on the
		// validator's regexp engine, so the reference path keeps it.
		switch {
		case sch == nil || n.typ != "string" || n.format == "regex":
			sp.slow = true
		case sch.Format != nil:
			sp.format = sch.Format.Validate
		}
	}
	k := t.Kind()
	switch n.typ {
	case "string":
		if k != reflect.String {
			return sp, false
		}
		sp.kind, sp.length = kString, n.length
		if n.pattern != "" {
			re, err := CompilePattern(n.pattern)
			if err != nil {
				return sp, false
			}
			sp.re = re
		}
		if n.enum != nil {
			sp.enumStr = map[string]bool{}
			for _, e := range n.enum {
				if s, ok := e.(string); ok {
					sp.enumStr[s] = true
				}
			}
		}
	case "integer":
		switch k {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			sp.kind = kInt
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			sp.kind = kUint
		default:
			return sp, false
		}
		sp.bits = t.Bits()
		if !sp.intBounds(n) {
			sp.slow = true
		}
		if n.enum != nil {
			sp.enumInt = map[int64]bool{}
			for _, e := range n.enum {
				num, ok := e.(json.Number)
				if !ok {
					continue
				}
				r, ok := new(big.Rat).SetString(string(num))
				if ok && r.IsInt() && r.Num().IsInt64() {
					sp.enumInt[r.Num().Int64()] = true
				}
			}
		}
	case "number":
		if k != reflect.Float64 {
			return sp, false // float32 rounds twice on the reference path
		}
		sp.kind = kFloat64
		if n.enum != nil {
			sp.slow = true
		}
		for i, b := range []*big.Rat{n.minimum, n.maximum, n.exclusiveMinimum, n.exclusiveMaximum} {
			if b == nil {
				continue
			}
			// Rounding is monotonic, so a value whose float64 is strictly
			// beyond the bound's float64 is strictly beyond the bound; floatOK
			// leaves equal floats to the reference path.
			f, _ := b.Float64()
			*[]*float64{&sp.fmin, &sp.fmax, &sp.fxmin, &sp.fxmax}[i] = f
			sp.fbounds |= 1 << i
		}
	case "boolean":
		if k != reflect.Bool {
			return sp, false
		}
		sp.kind = kBool
		if n.enum != nil {
			sp.slow = true
		}
	default:
		return sp, false
	}
	return sp, true
}

// intBounds turns the schema's bounds into inclusive int64 bounds. It reports
// false when one does not fit an int64 or multipleOf is not an integer.
func (sp *scalarPlan) intBounds(n *node) bool {
	one := big.NewInt(1)
	set := func(r *big.Rat, lower, exclusive bool) bool {
		if r == nil {
			return true
		}
		// The least integer >= r (lower) or the greatest <= r (upper).
		q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
		if lower {
			if m.Sign() != 0 || exclusive {
				q.Add(q, one)
			}
		} else if exclusive && m.Sign() == 0 {
			q.Sub(q, one)
		}
		if !q.IsInt64() {
			return false
		}
		v := q.Int64()
		if lower {
			if !sp.hasLo || v > sp.lo {
				sp.lo, sp.hasLo = v, true
			}
		} else if !sp.hasHi || v < sp.hi {
			sp.hi, sp.hasHi = v, true
		}
		return true
	}
	ok := set(n.minimum, true, false) && set(n.exclusiveMinimum, true, true) &&
		set(n.maximum, false, false) && set(n.exclusiveMaximum, false, true)
	if n.multipleOf != nil {
		if !n.multipleOf.IsInt() || !n.multipleOf.Num().IsInt64() || n.multipleOf.Sign() <= 0 {
			return false
		}
		sp.multipleOf = n.multipleOf.Num().Int64()
	}
	return ok
}

// Decode decodes args into *dst, which must point to a zero value of the
// plan's struct type. It reports false, leaving *dst in an unspecified state,
// when the caller must take the reference path instead.
func (p *Plan) Decode(args []byte, dst unsafe.Pointer) bool {
	s := scanner{b: args}
	s.ws()
	var ok bool
	if s.i == len(s.b) || s.literal("null") {
		ok = p.root.fill(0, 0, dst) // no arguments: {}
	} else {
		ok = p.root.decode(&s, dst)
	}
	s.ws()
	return ok && s.i == len(s.b)
}

// decode reads an object into the struct at base.
func (o *objectPlan) decode(s *scanner, base unsafe.Pointer) bool {
	var present, nulled uint64
	more, ok := s.open('{', '}')
	for ; more; more, ok = s.next('}') {
		key, isKey := s.key()
		if !isKey || !s.colon() {
			return false
		}
		fi := o.field(key)
		if fi < 0 || present&(1<<fi) != 0 {
			return false // unknown or repeated key
		}
		present |= 1 << fi
		f := &o.fields[fi]
		if s.literal("null") {
			if f.required {
				return false
			}
			nulled |= 1 << fi // null for an optional member means absent
		} else if !f.val.decode(s, unsafe.Add(base, f.offset)) {
			return false
		}
	}
	return ok && o.fill(present, nulled, base)
}

// fill checks that every required member came and applies the defaults of
// the absent ones, decoding each default's text as if it had come.
func (o *objectPlan) fill(present, nulled uint64, base unsafe.Pointer) bool {
	for i := range o.fields {
		if present&(1<<i) != 0 && nulled&(1<<i) == 0 {
			continue
		}
		f := &o.fields[i]
		if f.required {
			return false
		}
		if f.def != nil {
			ds := scanner{b: f.def}
			if !f.val.decode(&ds, unsafe.Add(base, f.offset)) || ds.i != len(ds.b) {
				return false
			}
		}
	}
	return true
}

func (o *objectPlan) field(key []byte) int {
	for i := range o.fields {
		if string(key) == o.fields[i].name {
			return i
		}
	}
	return -1
}

// decode reads one value into the Go value at at, which holds its zero value.
func (vp *valuePlan) decode(s *scanner, at unsafe.Pointer) bool {
	if vp.slow {
		return false
	}
	switch vp.kind {
	case vScalar:
		return vp.scalar.decode(s, at)
	case vPtr:
		v := reflect.New(vp.elem.typ)
		if !vp.elem.decode(s, v.UnsafePointer()) {
			return false
		}
		*(*unsafe.Pointer)(at) = v.UnsafePointer()
		return true
	case vStruct:
		return vp.obj.decode(s, at)
	case vSlice:
		if vp.strings {
			return vp.decodeStrings(s, at)
		}
		return vp.decodeSlice(s, at)
	case vMap:
		return vp.decodeMap(s, at)
	}
	return false
}

// maxUniqueScan bounds the arrays whose uniqueness the plan checks pair by
// pair; longer ones go to the validator, which hashes.
const maxUniqueScan = 32

// decodeSlice reads an array element by element through reflect.
func (vp *valuePlan) decodeSlice(s *scanner, at unsafe.Pointer) bool {
	more, ok := s.open('[', ']')
	if !ok {
		return false
	}
	out := reflect.MakeSlice(vp.typ, 0, 4)
	elem := reflect.New(vp.elem.typ)
	for ; more; more, ok = s.next(']') {
		elem.Elem().SetZero()
		if !vp.elem.decode(s, elem.UnsafePointer()) {
			return false
		}
		out = reflect.Append(out, elem.Elem())
	}
	if !ok {
		return false
	}
	n := out.Len()
	if !vp.count.allow(n) {
		return false
	}
	if vp.unique {
		if n > maxUniqueScan {
			return false
		}
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if out.Index(i).Equal(out.Index(j)) {
					return false
				}
			}
		}
	}
	// Set through reflect, which knows the slice's type, rather than write a
	// header layout of our own through at. It costs an allocation per call:
	// at, and so the caller's argument struct, escapes to the heap.
	reflect.NewAt(vp.typ, at).Elem().Set(out)
	return true
}

var stringsType = reflect.TypeFor[[]string]()

// decodeStrings reads an array of strings with one allocation for the slice.
func (vp *valuePlan) decodeStrings(s *scanner, at unsafe.Pointer) bool {
	var buf [8]string
	list := buf[:0]
	more, ok := s.open('[', ']')
	for ; more; more, ok = s.next(']') {
		var v string
		if !vp.elem.scalar.decode(s, unsafe.Pointer(&v)) {
			return false
		}
		list = append(list, v)
	}
	if !ok || !vp.count.allow(len(list)) {
		return false
	}
	if vp.unique {
		if len(list) > maxUniqueScan {
			return false
		}
		for i := range list {
			for j := i + 1; j < len(list); j++ {
				if list[i] == list[j] {
					return false
				}
			}
		}
	}
	if vp.typ == stringsType {
		// at holds a []string: store it as one, with one allocation.
		*(*[]string)(at) = append(make([]string, 0, len(list)), list...)
		return true
	}
	// A slice of a named string type: through reflect, which knows it.
	out := reflect.MakeSlice(vp.typ, len(list), len(list))
	for i, v := range list {
		out.Index(i).SetString(v)
	}
	reflect.NewAt(vp.typ, at).Elem().Set(out)
	return true
}

// decodeMap reads an object of additional properties into a map.
func (vp *valuePlan) decodeMap(s *scanner, at unsafe.Pointer) bool {
	more, ok := s.open('{', '}')
	if !ok {
		return false
	}
	m := reflect.MakeMap(vp.typ)
	if more {
		elem := reflect.New(vp.elem.typ)
		keyType := vp.typ.Key()
		for ; more; more, ok = s.next('}') {
			kb, isKey := s.key()
			if !isKey || !s.colon() {
				return false
			}
			key := reflect.ValueOf(string(kb)).Convert(keyType)
			if m.MapIndex(key).IsValid() {
				return false // a repeated key
			}
			elem.Elem().SetZero()
			if !vp.elem.decode(s, elem.UnsafePointer()) {
				return false
			}
			m.SetMapIndex(key, elem.Elem())
		}
	}
	if !ok {
		return false
	}
	reflect.NewAt(vp.typ, at).Elem().Set(m) // see decodeSlice
	return true
}

// decode reads one scalar into at, checking the schema's keywords. It
// coerces as the reference path does (unless strict), and leaves to that path
// what it cannot match exactly, such as 1e1 for an integer or 1.0 for a
// boolean.
func (sp *scalarPlan) decode(s *scanner, at unsafe.Pointer) bool {
	if sp.slow {
		return false
	}
	switch sp.kind {
	case kString:
		v, ok := s.str()
		if !ok || !sp.stringOK(v) {
			return false
		}
		*(*string)(at) = v
		return true
	case kBool:
		v, ok := sp.boolean(s)
		if ok {
			*(*bool)(at) = v
		}
		return ok
	case kInt, kUint:
		digits, ok := sp.integer(s)
		if !ok {
			return false
		}
		v, ok := sp.intValue(digits)
		if !ok {
			return false
		}
		// Truncating two's complement gives one bit pattern for a signed
		// and an unsigned integer of each size: the store is the same.
		switch sp.bits {
		case 8:
			*(*uint8)(at) = uint8(v)
		case 16:
			*(*uint16)(at) = uint16(v)
		case 32:
			*(*uint32)(at) = uint32(v)
		default:
			*(*uint64)(at) = v
		}
		return true
	case kFloat64:
		v, ok := sp.number(s)
		if !ok || !sp.floatOK(v) {
			return false
		}
		*(*float64)(at) = v
		return true
	}
	return false
}

// boolean reads true or false, or under lax rules a Pydantic boolean string
// or the integer 0 or 1.
func (sp *scalarPlan) boolean(s *scanner) (value, ok bool) {
	switch {
	case s.literal("true"):
		return true, true
	case s.literal("false"):
		return false, true
	case sp.strict:
		return false, false
	case s.peek() == '"':
		v, ok := s.str()
		if !ok {
			return false, false
		}
		return boolString(v)
	}
	tok, isInt := s.number()
	switch {
	case !isInt:
		return false, false // 1.0 and 1e0 are booleans too: the reference path knows
	case string(tok) == "1":
		return true, true
	case string(tok) == "0" || string(tok) == "-0":
		return false, true
	}
	return false, false
}

// integer returns the decimal digits of an integer value: a JSON integer, a
// number with a zero fraction written without exponent (10.0), or under lax
// rules a string holding an integer or a boolean.
func (sp *scalarPlan) integer(s *scanner) (string, bool) {
	switch c := s.peek(); {
	case c == '"':
		if sp.strict {
			return "", false
		}
		v, ok := s.str()
		if !ok {
			return "", false
		}
		return intString(v)
	case c == 't' || c == 'f':
		if sp.strict {
			return "", false
		}
		switch {
		case s.literal("true"):
			return "1", true
		case s.literal("false"):
			return "0", true
		}
		return "", false
	}
	tok, isInt := s.number()
	if tok == nil {
		return "", false
	}
	if isInt {
		return unsafeString(tok), true
	}
	// d+.0* with no exponent: the integer part. Anything else goes the
	// reference way (exact rational arithmetic).
	dot := -1
	for i, c := range tok {
		switch {
		case c == '.':
			dot = i
		case c == 'e' || c == 'E':
			return "", false
		case dot >= 0 && c != '0':
			return "", false
		}
	}
	return unsafeString(tok[:dot]), true
}

// number reads a JSON number, or under lax rules a string holding a decimal
// number or a boolean.
func (sp *scalarPlan) number(s *scanner) (float64, bool) {
	switch c := s.peek(); {
	case c == '"':
		if sp.strict {
			return 0, false
		}
		v, ok := s.str()
		if !ok {
			return 0, false
		}
		text, ok := floatString(v)
		if !ok {
			return 0, false
		}
		f, err := strconv.ParseFloat(text, 64)
		return f, err == nil
	case c == 't' || c == 'f':
		switch {
		case sp.strict:
			return 0, false
		case s.literal("true"):
			return 1, true
		case s.literal("false"):
			return 0, true
		}
		return 0, false
	}
	tok, _ := s.number()
	if tok == nil || hugeNumber(unsafeString(tok)) {
		return 0, false
	}
	f, err := strconv.ParseFloat(unsafeString(tok), 64)
	return f, err == nil
}

func (sp *scalarPlan) stringOK(v string) bool {
	// Runes are counted only when there is a limit to hold them to.
	if sp.length != (limits{-1, -1}) && !sp.length.allow(utf8.RuneCountInString(v)) {
		return false
	}
	if sp.re != nil && !sp.re.MatchString(v) {
		return false
	}
	if sp.format != nil && sp.format(v) != nil {
		return false
	}
	return sp.enumStr == nil || sp.enumStr[v]
}

// intValue parses the digits of an integer as the plan's Go type, signed
// (kInt) or unsigned (kUint), of sp.bits bits, and checks the schema's
// keywords. It returns the value's bits; false means out of range or refused.
func (sp *scalarPlan) intValue(digits string) (uint64, bool) {
	if sp.kind == kUint {
		v, err := strconv.ParseUint(digits, 10, sp.bits)
		return v, err == nil && v <= math.MaxInt64 && sp.intOK(int64(v))
	}
	v, err := strconv.ParseInt(digits, 10, sp.bits)
	return uint64(v), err == nil && sp.intOK(v)
}

func (sp *scalarPlan) intOK(v int64) bool {
	if sp.hasLo && v < sp.lo || sp.hasHi && v > sp.hi {
		return false
	}
	if sp.multipleOf != 0 && v%sp.multipleOf != 0 {
		return false
	}
	return sp.enumInt == nil || sp.enumInt[v]
}

// floatOK checks the bounds. A value equal to a bound as a float64 may differ
// from it as the exact decimal the validator compares, so it is left to the
// reference path; unequal floats order as their exact values do.
func (sp *scalarPlan) floatOK(v float64) bool {
	b := sp.fbounds
	return (b&1 == 0 || v > sp.fmin) &&
		(b&2 == 0 || v < sp.fmax) &&
		(b&4 == 0 || v > sp.fxmin) &&
		(b&8 == 0 || v < sp.fxmax)
}

func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// scanner reads JSON text strictly, by the steps of internal/jsonscan:
// whatever it accepts, encoding/json accepts with the same meaning.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() { s.i = jsonscan.WS(s.b, s.i) }

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// open consumes the bracket that opens an object or array ('{' or '[') and
// the whitespace after it. more is false when the container is empty: its
// closing bracket came at once, and is consumed too.
func (s *scanner) open(opening, closing byte) (more, ok bool) {
	s.i, more, ok = jsonscan.Open(s.b, s.i, opening, closing)
	return more, ok
}

// next consumes what follows a member or an item: a comma and the
// whitespace after it (more), or the closing bracket (!more). Anything else
// is !ok.
func (s *scanner) next(closing byte) (more, ok bool) {
	s.i, more, ok = jsonscan.Next(s.b, s.i, closing)
	return more, ok
}

// colon consumes the colon after an object key, with the whitespace around
// it.
func (s *scanner) colon() (ok bool) {
	s.i, ok = jsonscan.Colon(s.b, s.i)
	return ok
}

// literal consumes word if it comes next, followed by a delimiter.
func (s *scanner) literal(word string) (ok bool) {
	s.i, ok = jsonscan.Literal(s.b, s.i, word)
	return ok
}

// key reads an object key that needs no unescaping; anything else is left to
// the reference path.
func (s *scanner) key() (k []byte, ok bool) {
	k, s.i, ok = jsonscan.Plain(s.b, s.i)
	return k, ok
}

// str reads a string value. jsonscan decodes it when it is sure to read what
// encoding/json reads: plain ASCII is copied as is. What it leaves (a
// surrogate escape, invalid UTF-8, which encoding/json replaces with U+FFFD)
// goes through encoding/json itself, so that it decodes exactly as it does
// on the reference path.
func (s *scanner) str() (string, bool) {
	if v, i, ok := jsonscan.Plain(s.b, s.i); ok { // inlined: the usual string costs no call
		s.i = i
		return string(v), true
	}
	v, i, owned, ok := jsonscan.Str(s.b, s.i)
	switch {
	case !ok:
		return s.strSlow()
	case owned: // a new slice that no one else holds
		s.i = i
		return unsafeString(v), true
	}
	s.i = i
	return string(v), true
}

// strSlow reads a string value through encoding/json.
func (s *scanner) strSlow() (string, bool) {
	if s.peek() != '"' {
		return "", false
	}
	for i := s.i + 1; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			var v string
			if json.Unmarshal(s.b[s.i:i+1], &v) != nil {
				return "", false
			}
			s.i = i + 1
			return v, true
		case c == '\\':
			i++ // the escaped byte cannot end the string
		case c < 0x20:
			return "", false
		}
	}
	return "", false
}

// number reads a JSON number by the grammar of RFC 8259, returning its text
// (nil when there is none) and whether it is written as an integer.
func (s *scanner) number() (tok []byte, isInt bool) {
	end, isInt, ok := jsonscan.Number(s.b, s.i)
	if !ok {
		return nil, false
	}
	tok, s.i = s.b[s.i:end], end
	return tok, isInt
}
