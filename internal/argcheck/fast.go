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
)

// Plan decodes a tool's arguments straight into one Go struct type while it
// validates them, for the common call: a JSON object whose values already
// have their declared types. It is built once per (schema, type) by
// Checker.Plan and is safe for concurrent use.
//
// Plan.Decode either succeeds, and then its result is the one Check plus
// encoding/json would give, or it reports false and the caller takes the
// reference path (Check, then json.Unmarshal), which also explains the
// problems. Decode reports false for anything it is not sure of: coercion,
// escaped keys, duplicate keys, a broken constraint, a format keyword, and
// every kind of invalid input.
type Plan struct {
	fields []fieldPlan
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
	minLen, maxLen int // -1 when unset
	re             *regexp.Regexp
	enumStr        map[string]bool
	format         func(any) error // the validator's check of the format keyword

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

type fieldPlan struct {
	name     string
	offset   uintptr
	required bool
	def      []byte // the default as JSON text; nil when none

	ptr      bool         // the field is *T for a scalar T
	ptrType  reflect.Type // T, when ptr
	slice    bool         // the field is []T for a scalar T
	sliceTyp reflect.Type
	elemSize uintptr

	scalar scalarPlan

	minItems, maxItems int // -1 when unset
	unique             bool
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// Plan returns a decoder of the arguments into values of struct type t, or
// nil when t or the schema has a shape the plan does not handle (nested
// objects, maps, float32, custom unmarshalers, fields that are no param ...);
// then every call takes the reference path.
func (c *Checker) Plan(t reflect.Type) *Plan {
	root := c.root
	if t.Kind() != reflect.Struct || root.typ != "object" || !root.closed || len(root.props) > 64 {
		return nil
	}
	if implementsUnmarshaler(t) {
		return nil
	}
	p := &Plan{}
	seen := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		if sf.Anonymous {
			return nil
		}
		name, ok := plainJSONName(sf)
		if !ok {
			return nil
		}
		n := root.props[name]
		if n == nil || seen[name] {
			return nil
		}
		seen[name] = true
		f, ok := c.fieldPlan(sf, n, c.schema.Properties[name])
		if !ok {
			return nil
		}
		f.name = name
		f.required = root.required[name]
		if n.hasDefault {
			def, err := json.Marshal(n.def)
			if err != nil {
				return nil
			}
			f.def = def
		}
		p.fields = append(p.fields, f)
	}
	if len(seen) != len(root.props) {
		return nil // a param with no field: the reference path decides
	}
	return p
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

func (c *Checker) fieldPlan(sf reflect.StructField, n *node, sch *jsonschema.Schema) (fieldPlan, bool) {
	f := fieldPlan{name: sf.Name, offset: sf.Offset, minItems: -1, maxItems: -1}
	t := sf.Type
	if implementsUnmarshaler(t) {
		return f, false
	}
	switch {
	case t.Kind() == reflect.Pointer:
		if implementsUnmarshaler(t.Elem()) || n.typ == "array" || n.typ == "object" {
			return f, false
		}
		f.ptr, f.ptrType = true, t.Elem()
		t = t.Elem()
	case t.Kind() == reflect.Slice:
		if n.typ != "array" || n.items == nil || implementsUnmarshaler(t.Elem()) {
			return f, false
		}
		f.slice, f.sliceTyp, f.elemSize = true, t, t.Elem().Size()
		if n.minItems != nil {
			f.minItems = *n.minItems
		}
		if n.maxItems != nil {
			f.maxItems = *n.maxItems
		}
		f.unique = n.unique
		if n.enum != nil || n.format != "" {
			return f, false
		}
		var items *jsonschema.Schema
		if sch != nil {
			items = sch.Items2020
			if is, ok := sch.Items.(*jsonschema.Schema); ok && items == nil {
				items = is
			}
		}
		sp, ok := c.scalarPlan(t.Elem(), n.items, items)
		f.scalar = sp
		return f, ok
	}
	sp, ok := c.scalarPlan(t, n, sch)
	f.scalar = sp
	return f, ok
}

func (c *Checker) scalarPlan(t reflect.Type, n *node, sch *jsonschema.Schema) (scalarPlan, bool) {
	sp := scalarPlan{minLen: -1, maxLen: -1, strict: c.strict}
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
		sp.kind = kString
		if n.minLength != nil {
			sp.minLen = *n.minLength
		}
		if n.maxLength != nil {
			sp.maxLen = *n.maxLength
		}
		if n.pattern != "" {
			re, err := regexp.Compile(n.pattern)
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
	var present, nulled uint64
	switch {
	case s.i == len(s.b):
	case s.literal("null"):
	case s.b[s.i] == '{':
		s.i++
		s.ws()
		if s.peek() == '}' {
			s.i++
			break
		}
		for {
			key, ok := s.key()
			if !ok {
				return false
			}
			fi := p.field(key)
			if fi < 0 || present&(1<<fi) != 0 {
				return false // unknown or repeated key
			}
			present |= 1 << fi
			s.ws()
			if s.peek() != ':' {
				return false
			}
			s.i++
			s.ws()
			f := &p.fields[fi]
			if s.literal("null") {
				if f.required {
					return false
				}
				nulled |= 1 << fi
			} else if !f.decode(&s, dst) {
				return false
			}
			s.ws()
			switch s.peek() {
			case ',':
				s.i++
				s.ws()
				continue
			case '}':
				s.i++
			default:
				return false
			}
			break
		}
	default:
		return false
	}
	s.ws()
	if s.i != len(s.b) {
		return false
	}
	for i := range p.fields {
		f := &p.fields[i]
		if present&(1<<i) != 0 && nulled&(1<<i) == 0 {
			continue
		}
		if f.required {
			return false
		}
		if f.def != nil {
			ds := scanner{b: f.def}
			if !f.decode(&ds, dst) || ds.i != len(ds.b) {
				return false
			}
		}
	}
	return true
}

func (p *Plan) field(key []byte) int {
	for i := range p.fields {
		if p.fields[i].nameEq(key) {
			return i
		}
	}
	return -1
}

// nameEq compares against the JSON name, which Plan stores in name.
func (f *fieldPlan) nameEq(key []byte) bool { return string(key) == f.name }

// decode reads one value into the field.
func (f *fieldPlan) decode(s *scanner, base unsafe.Pointer) bool {
	at := unsafe.Add(base, f.offset)
	switch {
	case f.ptr:
		v := reflect.New(f.ptrType)
		if !f.scalar.decode(s, v.UnsafePointer()) {
			return false
		}
		*(*unsafe.Pointer)(at) = v.UnsafePointer()
		return true
	case f.slice:
		return f.decodeSlice(s, at)
	}
	return f.scalar.decode(s, at)
}

func (f *fieldPlan) decodeSlice(s *scanner, at unsafe.Pointer) bool {
	if s.peek() != '[' {
		return false
	}
	s.i++
	s.ws()
	if f.sliceTyp.Elem().Kind() == reflect.String {
		return f.decodeStrings(s, at)
	}
	// Other element kinds: decode into a scratch value per element and build
	// the slice with reflect; calls with such arrays are rarer.
	out := reflect.MakeSlice(f.sliceTyp, 0, 4)
	elem := reflect.New(f.sliceTyp.Elem())
	if s.peek() == ']' {
		s.i++
	} else {
		for {
			elem.Elem().SetZero()
			if !f.scalar.decode(s, elem.UnsafePointer()) {
				return false
			}
			out = reflect.Append(out, elem.Elem())
			s.ws()
			if s.peek() == ',' {
				s.i++
				s.ws()
				continue
			}
			if s.peek() != ']' {
				return false
			}
			s.i++
			break
		}
	}
	n := out.Len()
	if !f.countOK(n) {
		return false
	}
	if f.unique {
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
	reflect.NewAt(f.sliceTyp, at).Elem().Set(out)
	return true
}

// maxUniqueScan bounds the arrays whose uniqueness the plan checks pair by
// pair; longer ones go to the validator, which hashes.
const maxUniqueScan = 32

func (f *fieldPlan) countOK(n int) bool {
	return (f.minItems < 0 || n >= f.minItems) && (f.maxItems < 0 || n <= f.maxItems)
}

// decodeStrings reads an array of strings with one allocation for the slice.
func (f *fieldPlan) decodeStrings(s *scanner, at unsafe.Pointer) bool {
	var buf [8]string
	list := buf[:0]
	if s.peek() == ']' {
		s.i++
	} else {
		for {
			var v string
			if !f.scalar.decode(s, unsafe.Pointer(&v)) {
				return false
			}
			list = append(list, v)
			s.ws()
			if s.peek() == ',' {
				s.i++
				s.ws()
				continue
			}
			if s.peek() != ']' {
				return false
			}
			s.i++
			break
		}
	}
	if !f.countOK(len(list)) {
		return false
	}
	if f.unique {
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
	out := reflect.MakeSlice(f.sliceTyp, len(list), len(list))
	dst := unsafe.Slice((*string)(out.UnsafePointer()), len(list))
	copy(dst, list)
	reflect.NewAt(f.sliceTyp, at).Elem().Set(out)
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
	case kInt:
		digits, ok := sp.integer(s)
		if !ok {
			return false
		}
		v, err := strconv.ParseInt(digits, 10, sp.bits)
		if err != nil || !sp.intOK(v) {
			return false
		}
		switch sp.bits {
		case 8:
			*(*int8)(at) = int8(v)
		case 16:
			*(*int16)(at) = int16(v)
		case 32:
			*(*int32)(at) = int32(v)
		default:
			*(*int64)(at) = v
		}
		return true
	case kUint:
		digits, ok := sp.integer(s)
		if !ok {
			return false
		}
		v, err := strconv.ParseUint(digits, 10, sp.bits)
		if err != nil || v > math.MaxInt64 || !sp.intOK(int64(v)) {
			return false
		}
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
	if sp.minLen >= 0 || sp.maxLen >= 0 {
		n := utf8.RuneCountInString(v)
		if sp.minLen >= 0 && n < sp.minLen || sp.maxLen >= 0 && n > sp.maxLen {
			return false
		}
	}
	if sp.re != nil && !sp.re.MatchString(v) {
		return false
	}
	if sp.format != nil && sp.format(v) != nil {
		return false
	}
	return sp.enumStr == nil || sp.enumStr[v]
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

// scanner reads JSON text strictly: whatever it accepts, encoding/json
// accepts with the same meaning.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// literal consumes word if it comes next, followed by a delimiter.
func (s *scanner) literal(word string) bool {
	end := s.i + len(word)
	if end > len(s.b) || string(s.b[s.i:end]) != word {
		return false
	}
	if end < len(s.b) && !isDelim(s.b[end]) {
		return false
	}
	s.i = end
	return true
}

func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', '}', ']', ':':
		return true
	}
	return false
}

// key reads an object key that needs no unescaping; anything else is left to
// the reference path.
func (s *scanner) key() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	start := s.i + 1
	for i := start; i < len(s.b); i++ {
		c := s.b[i]
		switch {
		case c == '"':
			s.i = i + 1
			return s.b[start:i], true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return nil, false
		}
	}
	return nil, false
}

// str reads a string value. Plain ASCII is copied as is; escapes and
// non-ASCII text go through encoding/json so that they decode exactly as
// they do on the reference path (invalid UTF-8 becomes U+FFFD, and so on).
func (s *scanner) str() (string, bool) {
	if s.peek() != '"' {
		return "", false
	}
	start := s.i + 1
	plain := true
	for i := start; i < len(s.b); i++ {
		c := s.b[i]
		switch {
		case c == '"':
			s.i = i + 1
			if plain {
				return string(s.b[start:i]), true
			}
			var v string
			if json.Unmarshal(s.b[start-1:i+1], &v) != nil {
				return "", false
			}
			return v, true
		case c == '\\':
			plain = false
			i++ // the escaped byte cannot end the string
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			plain = false
		}
	}
	return "", false
}

// number reads a JSON number by the grammar of RFC 8259, returning its text
// (nil when there is none) and whether it is written as an integer.
func (s *scanner) number() (tok []byte, isInt bool) {
	b, i := s.b, s.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return nil, false
	}
	isInt = true
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false
		}
		isInt = false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false
		}
		isInt = false
	}
	if i < len(b) && !isDelim(b[i]) {
		return nil, false
	}
	s.i = i
	return b[start:i], isInt
}
