package toolreg

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/beam-agents/toolreg/canonjson"
	"github.com/beam-agents/toolreg/internal/argcheck"
)

// CheckResult validates v, a result of the tool's function, against the
// manifest's returns, and returns a *ToolResultError naming each failing
// path when it breaks them. A tool without returns accepts any result.
//
// The value is checked as encoding/json would encode it, from the Go value
// itself: struct fields by their json names (omitempty and omitzero leave a
// property out), a nil pointer, slice or map as null. A part that encodes
// itself (a json.Marshaler or encoding.TextMarshaler, such as time.Time) is
// encoded and its JSON checked. The runner and the effector call it on every
// result before handing it on.
func (t *Tool) CheckResult(v any) error {
	if t.spec.Returns == nil {
		return nil
	}
	rc := t.results()
	if rc.flatOK(v) {
		return nil
	}
	var w walker
	if rc.check(reflect.ValueOf(v), &w, ""); !w.failed {
		return nil
	}
	w = walker{explain: true}
	rc.check(reflect.ValueOf(v), &w, "")
	return &ToolResultError{Tool: t.spec.Name, Problems: w.ps}
}

// walker collects the problems found in a result. A first walk, not
// explaining, stops caring at the first problem and writes no paths, so a
// valid result costs no strings; a result that fails is walked again,
// explaining, for every problem at its path.
type walker struct {
	explain bool
	failed  bool
	ps      []ResultProblem
}

func (w *walker) add(path, want, got string) {
	w.failed = true
	if w.explain {
		w.ps = append(w.ps, ResultProblem{Path: path, Want: want, Got: got})
	}
}

// member is the path of path's member name; "" when not explaining.
func (w *walker) member(path, name string) string {
	if !w.explain {
		return ""
	}
	return path + "/" + pointerToken(name)
}

// index is the path of path's item i; "" when not explaining.
func (w *walker) index(path string, i int) string {
	if !w.explain {
		return ""
	}
	return path + "/" + strconv.Itoa(i)
}

// results returns the compiled check of the tool's returns.
func (t *Tool) results() *resultCheck {
	t.result.once.Do(func() { t.result.check = compileResult(t.spec.Returns) })
	return t.result.check
}

// resultChecker holds a tool's compiled result check, compiled on first use.
type resultChecker struct {
	once  sync.Once
	check *resultCheck
}

// resultCheck is one schema of a tool's returns, compiled for checking Go
// values: patterns, bounds and enums are parsed once.
type resultCheck struct {
	s *Schema

	plans sync.Map // reflect.Type -> *structPlan, for an object's struct types
	last  atomic.Pointer[structPlan]
	enc   atomic.Pointer[typeFlag] // selfEncoding of the last type seen here

	// numFast says checkNumber's fast path applies: 1 when every bound is
	// an int64 and a float64 exactly, 2 when a float64 only; 0 with an enum
	// or multipleOf, or a bound neither holds.
	numFast uint8
	strs    []string // a string enum's values

	pattern *regexp.Regexp
	format  *jsonschema.Schema // the format alone, asserted; nil without one
	enum    map[string]bool    // canonical JSON of each enum value

	min, max, exMin, exMax, multipleOf *bound

	items *resultCheck
	props []resultProp
	extra *resultCheck // additionalProperties
}

type resultProp struct {
	name     string
	required bool
	check    *resultCheck
}

// bound is a numeric keyword, exact, with its int64 value when it has one.
type bound struct {
	r       *big.Rat
	i       int64
	isInt   bool
	f       float64
	isFloat bool // f is the bound exactly
}

func newBound(n json.Number) *bound {
	if n == "" {
		return nil
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return nil // Spec.Validate refuses it
	}
	b := &bound{r: r}
	if r.IsInt() && r.Num().IsInt64() {
		b.i, b.isInt = r.Num().Int64(), true
	}
	// A float64 compares with the bound exactly as the decimal
	// encoding/json writes for it does only when the bound is a float64
	// whose shortest decimal is itself (0.5, 2.5; not 0.1).
	if f, exact := r.Float64(); exact {
		if short, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64)); ok && short.Cmp(r) == 0 {
			b.f, b.isFloat = f, true
		}
	}
	return b
}

func compileResult(s *Schema) *resultCheck {
	rc := &resultCheck{s: s}
	if s.Pattern != "" {
		// The loader refuses a pattern that does not compile, or that RE2
		// and ECMA-262 read differently. Shared with the argument checker.
		rc.pattern, _ = argcheck.CompilePattern(s.Pattern)
	}
	if s.Format != "" {
		rc.format = argcheck.CompileFormat(s.Format) // shared, asserted as in params
	}
	if len(s.Enum) > 0 && s.Type == TypeString {
		rc.strs = make([]string, 0, len(s.Enum))
		for _, e := range s.Enum {
			if str, ok := e.(string); ok {
				rc.strs = append(rc.strs, str)
			}
		}
	}
	if len(s.Enum) > 0 {
		rc.enum = make(map[string]bool, len(s.Enum))
		for _, e := range s.Enum {
			if b, err := canonjson.Marshal(e); err == nil {
				rc.enum[string(b)] = true
			}
		}
	}
	rc.min, rc.max = newBound(s.Minimum), newBound(s.Maximum)
	rc.exMin, rc.exMax = newBound(s.ExclusiveMinimum), newBound(s.ExclusiveMaximum)
	rc.multipleOf = newBound(s.MultipleOf)
	if (s.Type == TypeInteger || s.Type == TypeNumber) && s.Enum == nil && rc.multipleOf == nil {
		ints, floats := true, true
		for _, b := range []*bound{rc.min, rc.max, rc.exMin, rc.exMax} {
			if b != nil {
				ints = ints && b.isInt
				floats = floats && b.isFloat
			}
		}
		switch {
		case ints && floats:
			rc.numFast = 1
		case floats:
			rc.numFast = 2
		}
	}
	if s.Items != nil {
		rc.items = compileResult(s.Items)
	}
	if s.AdditionalProperties != nil {
		rc.extra = compileResult(s.AdditionalProperties)
	}
	for _, p := range s.Properties {
		rc.props = append(rc.props, resultProp{name: p.Name, required: p.Required(), check: compileResult(&p.Schema)})
	}
	return rc
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	jsonNumberType    = reflect.TypeFor[json.Number]()
)

// check validates v at path (a JSON Pointer) and appends each problem to ps.
func (rc *resultCheck) check(v reflect.Value, w *walker, path string) {
	add := func(want, got string) { w.add(path, want, got) }
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && !v.IsNil() {
		if v.Kind() == reflect.Pointer && selfEncoding(v.Type()) && !selfEncoding(v.Type().Elem()) {
			break // a MarshalJSON of the pointer's own
		}
		v = v.Elem()
	}
	if !v.IsValid() || nilable(v.Kind()) && v.IsNil() {
		add(describeSchema(rc.s), "null")
		return
	}
	if rc.selfEncoding(v.Type()) {
		rc.checkEncoded(v, w, path)
		return
	}
	rc.checkValue(v, w, path)
}

// checkValue is check for a value that is no pointer, interface or nil, and
// does not encode itself.
func (rc *resultCheck) checkValue(v reflect.Value, w *walker, path string) {
	add := func(want, got string) { w.add(path, want, got) }
	s := rc.s
	switch s.Type {
	case TypeString:
		if v.Kind() != reflect.String || v.Type() == jsonNumberType {
			add("string", jsonKind(v))
			return
		}
		str := v.String()
		if s.MinLength != nil && utf8.RuneCountInString(str) < *s.MinLength {
			add(fmt.Sprintf("at least %d characters", *s.MinLength), short(strconv.Quote(str)))
		}
		if s.MaxLength != nil && utf8.RuneCountInString(str) > *s.MaxLength {
			add(fmt.Sprintf("at most %d characters", *s.MaxLength), short(strconv.Quote(str)))
		}
		if rc.pattern != nil && !rc.pattern.MatchString(str) {
			add("a string matching "+strconv.Quote(s.Pattern), short(strconv.Quote(str)))
		}
		if rc.format != nil && rc.format.Validate(str) != nil {
			add("a string of format "+s.Format, short(strconv.Quote(str)))
		}
		if rc.strs != nil && !rc.enumHas(str) {
			add("one of "+enumText(s.Enum), short(strconv.Quote(str)))
		}
	case TypeInteger, TypeNumber:
		rc.checkNumber(v, w, path)
	case TypeBoolean:
		if v.Kind() != reflect.Bool {
			add("boolean", jsonKind(v))
			return
		}
		if rc.enum != nil && !rc.enum[strconv.FormatBool(v.Bool())] {
			add("one of "+enumText(s.Enum), strconv.FormatBool(v.Bool()))
		}
	case TypeArray:
		if v.Kind() != reflect.Slice && v.Kind() != reflect.Array || v.Type().Elem().Kind() == reflect.Uint8 {
			add(describeSchema(s), jsonKind(v))
			return
		}
		n := v.Len()
		if s.MinItems != nil && n < *s.MinItems {
			add(fmt.Sprintf("at least %d items", *s.MinItems), fmt.Sprintf("%d", n))
		}
		if s.MaxItems != nil && n > *s.MaxItems {
			add(fmt.Sprintf("at most %d items", *s.MaxItems), fmt.Sprintf("%d", n))
		}
		if s.UniqueItems {
			seen := make(map[string]int, n)
			for i := range n {
				b, err := canonjson.Marshal(v.Index(i).Interface())
				if err != nil {
					continue
				}
				if j, dup := seen[string(b)]; dup {
					add(fmt.Sprintf("unique items (item %d repeats item %d)", i, j), short(string(b)))
					break
				}
				seen[string(b)] = i
			}
		}
		if rc.items != nil {
			for i := range n {
				rc.items.check(v.Index(i), w, w.index(path, i))
			}
		}
		rc.checkEnum(v, w, path)
	case TypeObject:
		switch {
		case v.Kind() == reflect.Struct:
			rc.checkStruct(v, w, path)
		case v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String:
			rc.checkMap(v, w, path)
		default:
			add("object", jsonKind(v))
			return
		}
		rc.checkEnum(v, w, path)
	}
}

// enumHas reports whether a string enum holds str: a search of the list,
// which for the few values an enum has beats hashing.
func (rc *resultCheck) enumHas(str string) bool {
	return slices.Contains(rc.strs, str)
}

// checkEnum checks a composite value against the enum, by canonical JSON.
func (rc *resultCheck) checkEnum(v reflect.Value, w *walker, path string) {
	if rc.enum == nil {
		return
	}
	b, err := canonjson.Marshal(v.Interface())
	if err != nil || !rc.enum[string(b)] {
		w.add(path, "one of "+enumText(rc.s.Enum), short(string(b)))
	}
}

// checkEncoded checks what a value that encodes itself writes.
func (rc *resultCheck) checkEncoded(v reflect.Value, w *walker, path string) {
	raw, err := json.Marshal(v.Interface())
	if err != nil {
		w.add(path, describeSchema(rc.s), "a value that does not encode: "+err.Error())
		return
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		w.add(path, describeSchema(rc.s), "invalid JSON: "+err.Error())
		return
	}
	rc.check(reflect.ValueOf(x), w, path)
}

func (rc *resultCheck) checkNumber(v reflect.Value, w *walker, path string) {
	if rc.numFast != 0 {
		// The common cases, decided without the exact path's closures: an
		// int kind against integer bounds, a float kind against bounds a
		// float64 holds exactly.
		switch k := v.Kind(); {
		case rc.numFast == 1 && k >= reflect.Int && k <= reflect.Int64:
			i := v.Int()
			if (rc.min == nil || i >= rc.min.i) && (rc.max == nil || i <= rc.max.i) &&
				(rc.exMin == nil || i > rc.exMin.i) && (rc.exMax == nil || i < rc.exMax.i) {
				return
			}
		case k == reflect.Float32 || k == reflect.Float64:
			f := v.Float()
			if rc.s.Type == TypeNumber && rc.numFast == 1 || rc.numFast == 2 {
				if !math.IsNaN(f) && !math.IsInf(f, 0) && (rc.min == nil || f >= rc.min.f) && (rc.max == nil || f <= rc.max.f) &&
					(rc.exMin == nil || f > rc.exMin.f) && (rc.exMax == nil || f < rc.exMax.f) && rc.s.Type == TypeNumber {
					return
				}
			}
		}
	}
	s := rc.s
	add := func(want, got string) { w.add(path, want, got) }
	var (
		i       int64
		isInt   bool
		f       float64
		isFloat bool     // the value is the float64 f, not integral
		r       *big.Rat // set when the value is neither an int64 nor a float64
		text    string
	)
	switch {
	case v.Type() == jsonNumberType:
		text = v.String()
		var ok bool
		if r, ok = new(big.Rat).SetString(text); !ok {
			add(string(s.Type), strconv.Quote(text))
			return
		}
		if r.IsInt() && r.Num().IsInt64() {
			i, isInt, r = r.Num().Int64(), true, nil
		}
	case v.CanInt():
		i, isInt = v.Int(), true
	case v.CanUint():
		u := v.Uint()
		text = strconv.FormatUint(u, 10)
		if u <= math.MaxInt64 {
			i, isInt = int64(u), true
		} else {
			r = new(big.Rat).SetInt(new(big.Int).SetUint64(u))
		}
	case v.CanFloat():
		f = v.Float()
		if v.Kind() == reflect.Float32 {
			f = encodedFloat32(float32(f))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			add("a finite "+string(s.Type), strconv.FormatFloat(f, 'g', -1, 64))
			return
		}
		if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
			i, isInt = int64(f), true
		} else {
			isFloat = true
		}
	default:
		add(string(s.Type), jsonKind(v))
		return
	}
	// rat is the value exactly, for the comparisons no fast path decides.
	rat := func() *big.Rat {
		switch {
		case r != nil:
			return r
		case isInt:
			return new(big.Rat).SetInt64(i)
		}
		// The number a consumer reads: the decimal encoding/json writes for
		// f, not f's binary value (0.1, not 0.1000000000000000055...).
		x, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
		return x
	}
	numText := func() string {
		switch {
		case text != "":
			return text
		case isInt:
			return strconv.FormatInt(i, 10)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	if s.Type == TypeInteger && (isFloat || r != nil && !r.IsInt()) {
		add("integer", numText())
		return
	}
	// cmp compares the value with b: -1, 0 or 1.
	cmp := func(b *bound) int {
		switch {
		case isInt && b.isInt:
			return compare(i, b.i)
		case isFloat && b.isFloat:
			return compare(f, b.f)
		}
		return rat().Cmp(b.r)
	}
	if rc.min != nil && cmp(rc.min) < 0 {
		add("at least "+string(s.Minimum), numText())
	}
	if rc.exMin != nil && cmp(rc.exMin) <= 0 {
		add("above "+string(s.ExclusiveMinimum), numText())
	}
	if rc.max != nil && cmp(rc.max) > 0 {
		add("at most "+string(s.Maximum), numText())
	}
	if rc.exMax != nil && cmp(rc.exMax) >= 0 {
		add("below "+string(s.ExclusiveMaximum), numText())
	}
	if m := rc.multipleOf; m != nil {
		ok := false
		if isInt && m.isInt && m.i > 0 {
			ok = i%m.i == 0
		} else {
			ok = new(big.Rat).Quo(rat(), m.r).IsInt()
		}
		if !ok {
			add("a multiple of "+string(s.MultipleOf), numText())
		}
	}
	if rc.enum != nil {
		var b []byte
		if isInt {
			b = strconv.AppendInt(nil, i, 10)
		} else {
			b, _ = canonjson.AppendNumber(nil, numText())
		}
		if !rc.enum[string(b)] {
			add("one of "+enumText(s.Enum), numText())
		}
	}
}

// checkStruct checks a struct's fields, by json name, as the object's
// properties.
func (rc *resultCheck) checkStruct(v reflect.Value, w *walker, path string) {
	sp := rc.structPlan(v.Type())
	for i := range rc.props {
		p := &rc.props[i]
		f := sp.props[i]
		present := f != nil
		var fv reflect.Value
		if present {
			fv = v.Field(f.index)
			present = !(f.omitempty && emptyValue(fv) || f.omitzero && fv.IsZero())
		}
		switch {
		case present && sp.modes[i] == modeValid:
		case present && sp.modes[i] == modeString && p.check.stringOK(fv.String()):
		case present && sp.modes[i] == modeInt && p.check.intOK(fv.Int()):
		case present && sp.modes[i] == modeFloat && fv.Kind() == reflect.Float64 && p.check.floatOK(fv.Float()):
		case present && sp.modes[i] != modeWalk:
			p.check.checkValue(fv, w, w.member(path, p.name))
		case present:
			p.check.check(fv, w, w.member(path, p.name))
		case p.required:
			w.add(w.member(path, p.name), describeSchema(p.check.s), "missing")
		}
	}
	for _, f := range sp.extra {
		fv := v.Field(f.index)
		if f.omitempty && emptyValue(fv) || f.omitzero && fv.IsZero() {
			continue
		}
		if rc.extra != nil {
			rc.extra.check(fv, w, w.member(path, f.name))
		} else {
			w.add(w.member(path, f.name), "no such member: returns does not declare it", "a value")
		}
	}
}

// flatOK reports whether v, a struct or a pointer to one whose plan is
// flat, satisfies the object's schema, reading its fields from memory; false
// means "not known": the caller checks v by reflection, which explains.
func (rc *resultCheck) flatOK(v any) bool {
	if len(rc.props) == 0 || rc.s.Type != TypeObject {
		return false
	}
	t := reflect.TypeOf(v)
	if t == nil {
		return false
	}
	// The interface's data word: a pointer to the struct for a struct of
	// more than one word (a one-word struct may be stored in the word
	// itself, so it is left to reflection), or the pointer itself.
	data := (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1]
	switch {
	case t.Kind() == reflect.Struct && t.Size() > unsafe.Sizeof(uintptr(0)):
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct && data != nil:
		t = t.Elem()
	default:
		return false
	}
	sp := rc.structPlan(t)
	if !sp.flat {
		return false
	}
	for i := range sp.offs {
		p := unsafe.Add(data, sp.offs[i])
		c := rc.props[i].check
		ok := true
		switch sp.modes[i] {
		case modeValid:
		case modeString:
			ok = c.stringOK(*(*string)(p))
		case modeInt:
			var n int64
			switch sp.kinds[i] {
			case reflect.Int:
				n = int64(*(*int)(p))
			case reflect.Int8:
				n = int64(*(*int8)(p))
			case reflect.Int16:
				n = int64(*(*int16)(p))
			case reflect.Int32:
				n = int64(*(*int32)(p))
			case reflect.Int64:
				n = *(*int64)(p)
			}
			ok = c.intOK(n)
		case modeFloat:
			f := *(*float64)(p)
			if sp.kinds[i] == reflect.Float32 {
				f = encodedFloat32(*(*float32)(p))
			}
			ok = c.floatOK(f)
		}
		if !ok {
			return false
		}
	}
	return true
}

// checkMap checks a map's members as the object's properties and
// additionalProperties.
func (rc *resultCheck) checkMap(v reflect.Value, w *walker, path string) {
	for _, p := range rc.props {
		mv := v.MapIndex(reflect.ValueOf(p.name).Convert(v.Type().Key()))
		switch {
		case mv.IsValid():
			p.check.check(mv, w, w.member(path, p.name))
		case p.required:
			w.add(w.member(path, p.name), describeSchema(p.check.s), "missing")
		}
	}
	if v.Len() == 0 {
		return
	}
	for _, k := range sortedKeys(v.MapKeys()) {
		name := k.String()
		if rc.prop(name) != nil {
			continue
		}
		if rc.extra != nil {
			rc.extra.check(v.MapIndex(k), w, w.member(path, name))
		} else {
			w.add(w.member(path, name), "no such member: returns does not declare it", "a value")
		}
	}
}

// structPlan is how a struct type's fields meet the object's properties:
// the field of each property (nil when it has none), and the fields no
// property names. One plan is kept per struct type, the last one asked for
// first: a bound function returns one type.
type structPlan struct {
	t     reflect.Type
	props []*fieldInfo
	modes []fieldMode // of each property's field
	extra []*fieldInfo

	// flat is set when every property is a field of mode valid, string,
	// int or float without omitempty or omitzero, no other field is
	// encoded, and the type does not encode itself: then flatOK reads the
	// fields from the struct's memory, at offs, as kinds says.
	flat  bool
	offs  []uintptr
	kinds []reflect.Kind
}

// fieldMode is how a property's field is checked, decided once per type.
type fieldMode uint8

const (
	modeWalk   fieldMode = iota // check: pointers, interfaces, self-encoding
	modeDirect                  // checkValue: a plain value of a Go kind
	modeValid                   // nothing to check: the binder's type check holds
	modeString                  // stringOK, then checkValue to explain
	modeInt                     // intOK, then checkValue to explain
	modeFloat                   // floatOK, then checkValue to explain
)

// fieldModeOf decides how a field of type t is checked against rc.
func fieldModeOf(t reflect.Type, rc *resultCheck) fieldMode {
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Map, reflect.Array, reflect.Struct:
		if t.Kind() == reflect.Struct && !selfEncoding(t) {
			return modeDirect
		}
		return modeWalk
	}
	if selfEncoding(t) || t.Kind() == reflect.String && t == jsonNumberType {
		return modeWalk
	}
	s := rc.s
	plain := s.Enum == nil && s.Pattern == "" && s.Format == "" && s.MinLength == nil && s.MaxLength == nil &&
		s.Minimum == "" && s.Maximum == "" && s.ExclusiveMinimum == "" && s.ExclusiveMaximum == "" && s.MultipleOf == ""
	k := t.Kind()
	fits := s.Type == TypeString && k == reflect.String ||
		s.Type == TypeBoolean && k == reflect.Bool ||
		s.Type == TypeInteger && (t.ConvertibleTo(reflect.TypeFor[int64]()) && k != reflect.Float32 && k != reflect.Float64 && k != reflect.String && k != reflect.Bool)
	switch {
	case plain && fits:
		return modeValid
	case s.Type == TypeString && k == reflect.String:
		return modeString
	case (s.Type == TypeInteger || s.Type == TypeNumber) && k >= reflect.Int && k <= reflect.Int64 && rc.numFast == 1:
		return modeInt
	case s.Type == TypeNumber && (k == reflect.Float32 || k == reflect.Float64) && rc.numFast != 0:
		return modeFloat
	}
	return modeDirect
}

// stringOK reports whether str satisfies a string schema; false sends the
// value to checkValue, which says why.
func (rc *resultCheck) stringOK(str string) bool {
	s := rc.s
	// A string of n bytes holds n/4 to n code points: most lengths are
	// decided without counting them.
	if s.MinLength != nil && len(str)/utf8.UTFMax < *s.MinLength && utf8.RuneCountInString(str) < *s.MinLength ||
		s.MaxLength != nil && len(str) > *s.MaxLength && utf8.RuneCountInString(str) > *s.MaxLength {
		return false
	}
	return (rc.pattern == nil || rc.pattern.MatchString(str)) &&
		(rc.format == nil || rc.format.Validate(str) == nil) &&
		(rc.strs == nil || rc.enumHas(str))
}

// intOK is stringOK for an int kind, where every bound is an int64.
func (rc *resultCheck) intOK(i int64) bool {
	return (rc.min == nil || i >= rc.min.i) && (rc.max == nil || i <= rc.max.i) &&
		(rc.exMin == nil || i > rc.exMin.i) && (rc.exMax == nil || i < rc.exMax.i)
}

// floatOK is stringOK for a float kind, where every bound is a float64.
func (rc *resultCheck) floatOK(f float64) bool {
	return !math.IsNaN(f) && !math.IsInf(f, 0) &&
		(rc.min == nil || f >= rc.min.f) && (rc.max == nil || f <= rc.max.f) &&
		(rc.exMin == nil || f > rc.exMin.f) && (rc.exMax == nil || f < rc.exMax.f)
}

func (rc *resultCheck) structPlan(t reflect.Type) *structPlan {
	if sp := rc.last.Load(); sp != nil && sp.t == t {
		return sp
	}
	if sp, ok := rc.plans.Load(t); ok {
		rc.last.Store(sp.(*structPlan))
		return sp.(*structPlan)
	}
	fields := structFields(t)
	sp := &structPlan{t: t, props: make([]*fieldInfo, len(rc.props)), modes: make([]fieldMode, len(rc.props))}
	for i, p := range rc.props {
		if f, ok := fields.byName[p.name]; ok {
			sp.props[i] = f
			sp.modes[i] = fieldModeOf(t.Field(f.index).Type, p.check)
		}
	}
	for _, f := range fields.list {
		if rc.prop(f.name) == nil {
			sp.extra = append(sp.extra, f)
		}
	}
	sp.flat = len(sp.extra) == 0 && rc.enum == nil && !selfEncoding(t) && !selfEncoding(reflect.PointerTo(t))
	for i, f := range sp.props {
		if f == nil || f.omitempty || f.omitzero || sp.modes[i] == modeWalk || sp.modes[i] == modeDirect {
			sp.flat = false
			break
		}
		sf := t.Field(f.index)
		sp.offs = append(sp.offs, sf.Offset)
		sp.kinds = append(sp.kinds, sf.Type.Kind())
	}
	got, _ := rc.plans.LoadOrStore(t, sp)
	rc.last.Store(got.(*structPlan))
	return got.(*structPlan)
}

func (rc *resultCheck) prop(name string) *resultProp {
	for i := range rc.props {
		if rc.props[i].name == name {
			return &rc.props[i]
		}
	}
	return nil
}

// fieldInfo is one field encoding/json writes.
type fieldInfo struct {
	name                string
	index               int
	omitempty, omitzero bool
}

type structInfo struct {
	list   []*fieldInfo
	byName map[string]*fieldInfo
}

var structInfos sync.Map // reflect.Type -> *structInfo

// structFields returns the fields encoding/json encodes of struct type t,
// by json name. Embedded structs are not flattened: the binder refuses them
// in a bound result.
func structFields(t reflect.Type) *structInfo {
	if si, ok := structInfos.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{byName: map[string]*fieldInfo{}}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, hasTag := f.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !hasTag || name == "" {
			name = f.Name
		}
		fi := &fieldInfo{name: name, index: i}
		for _, o := range strings.Split(opts, ",") {
			fi.omitempty = fi.omitempty || o == "omitempty"
			fi.omitzero = fi.omitzero || o == "omitzero"
		}
		if _, dup := si.byName[name]; dup {
			continue
		}
		si.list = append(si.list, fi)
		si.byName[name] = fi
	}
	got, _ := structInfos.LoadOrStore(t, si)
	return got.(*structInfo)
}

// emptyValue is encoding/json's omitempty test.
func emptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

type typeFlag struct {
	t reflect.Type
	b bool
}

// selfEncoding is selfEncoding(t), remembered for the last type checked
// against rc: Implements is the dearest step of a check.
func (rc *resultCheck) selfEncoding(t reflect.Type) bool {
	if f := rc.enc.Load(); f != nil && f.t == t {
		return f.b
	}
	b := selfEncoding(t)
	rc.enc.Store(&typeFlag{t, b})
	return b
}

// selfEncoding reports whether encoding/json lets values of t encode
// themselves.
func selfEncoding(t reflect.Type) bool {
	return t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType)
}

// jsonKind names the JSON type v encodes as, for messages.
func jsonKind(v reflect.Value) string {
	if !v.IsValid() {
		return "null"
	}
	if v.Type() == jsonNumberType {
		return "number " + v.String()
	}
	switch v.Kind() {
	case reflect.String:
		return "string " + short(strconv.Quote(v.String()))
	case reflect.Bool:
		return "boolean " + strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "integer " + strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "integer " + strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return "number " + strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "string (base64 bytes)"
		}
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return v.Type().String()
}

// describeSchema names a schema's values for messages: "integer", "array of
// string".
func describeSchema(s *Schema) string {
	switch {
	case s.Type == TypeArray && s.Items != nil:
		return "array of " + describeSchema(s.Items)
	case s.Type == TypeObject && s.AdditionalProperties != nil:
		return "object of " + describeSchema(s.AdditionalProperties)
	}
	return string(s.Type)
}

func enumText(vals []any) string {
	b, err := json.Marshal(vals)
	if err != nil {
		return fmt.Sprint(vals)
	}
	return short(string(b))
}

// short cuts a value quoted in a message to a readable length.
func short(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// pointerToken escapes a member name for a JSON Pointer (RFC 6901).
func pointerToken(name string) string {
	if !strings.ContainsAny(name, "~/") {
		return name
	}
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

func sortedKeys(keys []reflect.Value) []reflect.Value {
	slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	return keys
}

func nilable(k reflect.Kind) bool {
	switch k {
	case reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Map:
		return true
	}
	return false
}

// encodedFloat32 is the number encoding/json writes for x: the shortest
// decimal that reads back as x in 32 bits (0.1, not 0.10000000149011612),
// which a consumer then reads as a float64.
func encodedFloat32(x float32) float64 {
	if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
		return float64(x)
	}
	f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
	return f
}

func compare[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
