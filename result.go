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
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/beam-agents/toolreg/canonjson"
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
	var ps []ResultProblem
	rc.check(reflect.ValueOf(v), "", &ps)
	if len(ps) > 0 {
		return &ToolResultError{Tool: t.spec.Name, Problems: ps}
	}
	return nil
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
	r     *big.Rat
	i     int64
	isInt bool
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
	return b
}

func compileResult(s *Schema) *resultCheck {
	rc := &resultCheck{s: s}
	if s.Pattern != "" {
		// The loader refuses a pattern that does not compile, or that RE2
		// and ECMA-262 read differently.
		rc.pattern, _ = regexp.Compile(s.Pattern)
	}
	if s.Format != "" {
		rc.format = compileFormat(s.Format)
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

// compileFormat compiles {"format": f} with the format asserted, as the
// argument checker asserts it, so a result's format means what a param's does.
func compileFormat(f string) *jsonschema.Schema {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "toolreg:///format.json"
	if err := c.AddResource(url, map[string]any{"format": f}); err != nil {
		return nil
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil
	}
	return sch
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	jsonNumberType    = reflect.TypeFor[json.Number]()
)

// check validates v at path (a JSON Pointer) and appends each problem to ps.
func (rc *resultCheck) check(v reflect.Value, path string, ps *[]ResultProblem) {
	add := func(want, got string) { *ps = append(*ps, ResultProblem{Path: path, Want: want, Got: got}) }
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
	if selfEncoding(v.Type()) {
		rc.checkEncoded(v, path, ps)
		return
	}
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
		if rc.enum != nil && !rc.enum[string(canonjson.AppendString(nil, str))] {
			add("one of "+enumText(s.Enum), short(strconv.Quote(str)))
		}
	case TypeInteger, TypeNumber:
		rc.checkNumber(v, add)
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
				rc.items.check(v.Index(i), path+"/"+strconv.Itoa(i), ps)
			}
		}
		rc.checkEnum(v, add)
	case TypeObject:
		switch {
		case v.Kind() == reflect.Struct:
			rc.checkStruct(v, path, ps)
		case v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String:
			rc.checkMap(v, path, ps)
		default:
			add("object", jsonKind(v))
			return
		}
		rc.checkEnum(v, add)
	}
}

// checkEnum checks a composite value against the enum, by canonical JSON.
func (rc *resultCheck) checkEnum(v reflect.Value, add func(want, got string)) {
	if rc.enum == nil {
		return
	}
	b, err := canonjson.Marshal(v.Interface())
	if err != nil || !rc.enum[string(b)] {
		add("one of "+enumText(rc.s.Enum), short(string(b)))
	}
}

// checkEncoded checks what a value that encodes itself writes.
func (rc *resultCheck) checkEncoded(v reflect.Value, path string, ps *[]ResultProblem) {
	raw, err := json.Marshal(v.Interface())
	if err != nil {
		*ps = append(*ps, ResultProblem{Path: path, Want: describeSchema(rc.s), Got: "a value that does not encode: " + err.Error()})
		return
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		*ps = append(*ps, ResultProblem{Path: path, Want: describeSchema(rc.s), Got: "invalid JSON: " + err.Error()})
		return
	}
	rc.check(reflect.ValueOf(x), path, ps)
}

func (rc *resultCheck) checkNumber(v reflect.Value, add func(want, got string)) {
	s := rc.s
	var (
		i     int64
		isInt bool
		r     *big.Rat // set when the value is not an int64
		text  string
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
		text = strconv.FormatInt(i, 10)
	case v.CanUint():
		u := v.Uint()
		text = strconv.FormatUint(u, 10)
		if u <= math.MaxInt64 {
			i, isInt = int64(u), true
		} else {
			r = new(big.Rat).SetInt(new(big.Int).SetUint64(u))
		}
	case v.CanFloat():
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			add("a finite "+string(s.Type), strconv.FormatFloat(f, 'g', -1, 64))
			return
		}
		text = strconv.FormatFloat(f, 'g', -1, 64)
		if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
			i, isInt = int64(f), true
		} else {
			r = new(big.Rat).SetFloat64(f)
		}
	default:
		add(string(s.Type), jsonKind(v))
		return
	}
	if s.Type == TypeInteger && !isInt && !r.IsInt() {
		add("integer", text)
		return
	}
	// cmp compares the value with b: -1, 0 or 1.
	cmp := func(b *bound) int {
		if isInt && b.isInt {
			switch {
			case i < b.i:
				return -1
			case i > b.i:
				return 1
			}
			return 0
		}
		x := r
		if isInt {
			x = new(big.Rat).SetInt64(i)
		}
		return x.Cmp(b.r)
	}
	if rc.min != nil && cmp(rc.min) < 0 {
		add("at least "+string(s.Minimum), text)
	}
	if rc.exMin != nil && cmp(rc.exMin) <= 0 {
		add("above "+string(s.ExclusiveMinimum), text)
	}
	if rc.max != nil && cmp(rc.max) > 0 {
		add("at most "+string(s.Maximum), text)
	}
	if rc.exMax != nil && cmp(rc.exMax) >= 0 {
		add("below "+string(s.ExclusiveMaximum), text)
	}
	if m := rc.multipleOf; m != nil {
		ok := false
		if isInt && m.isInt && m.i > 0 {
			ok = i%m.i == 0
		} else {
			x := r
			if isInt {
				x = new(big.Rat).SetInt64(i)
			}
			ok = new(big.Rat).Quo(x, m.r).IsInt()
		}
		if !ok {
			add("a multiple of "+string(s.MultipleOf), text)
		}
	}
	if rc.enum != nil {
		var b []byte
		if isInt {
			b = strconv.AppendInt(nil, i, 10)
		} else {
			b, _ = canonjson.AppendNumber(nil, text)
		}
		if !rc.enum[string(b)] {
			add("one of "+enumText(s.Enum), text)
		}
	}
}

// checkStruct checks a struct's fields, by json name, as the object's
// properties.
func (rc *resultCheck) checkStruct(v reflect.Value, path string, ps *[]ResultProblem) {
	fields := structFields(v.Type())
	for _, p := range rc.props {
		f, ok := fields.byName[p.name]
		var fv reflect.Value
		if ok {
			fv = v.FieldByIndex(f.index)
			if f.omitempty && emptyValue(fv) || f.omitzero && fv.IsZero() {
				ok = false
			}
		}
		if !ok {
			if p.required {
				*ps = append(*ps, ResultProblem{Path: path + "/" + pointerToken(p.name), Want: describeSchema(p.check.s), Got: "missing"})
			}
			continue
		}
		p.check.check(fv, path+"/"+pointerToken(p.name), ps)
	}
	for _, f := range fields.list {
		if rc.prop(f.name) != nil {
			continue
		}
		fv := v.FieldByIndex(f.index)
		if f.omitempty && emptyValue(fv) || f.omitzero && fv.IsZero() {
			continue
		}
		if rc.extra != nil {
			rc.extra.check(fv, path+"/"+pointerToken(f.name), ps)
			continue
		}
		*ps = append(*ps, ResultProblem{Path: path + "/" + pointerToken(f.name), Want: "no such member: returns does not declare it", Got: "a value"})
	}
}

// checkMap checks a map's members as the object's properties and
// additionalProperties.
func (rc *resultCheck) checkMap(v reflect.Value, path string, ps *[]ResultProblem) {
	for _, p := range rc.props {
		mv := v.MapIndex(reflect.ValueOf(p.name).Convert(v.Type().Key()))
		if !mv.IsValid() {
			if p.required {
				*ps = append(*ps, ResultProblem{Path: path + "/" + pointerToken(p.name), Want: describeSchema(p.check.s), Got: "missing"})
			}
			continue
		}
		p.check.check(mv, path+"/"+pointerToken(p.name), ps)
	}
	keys := v.MapKeys()
	for _, k := range sortedKeys(keys) {
		name := k.String()
		if rc.prop(name) != nil {
			continue
		}
		if rc.extra != nil {
			rc.extra.check(v.MapIndex(k), path+"/"+pointerToken(name), ps)
			continue
		}
		*ps = append(*ps, ResultProblem{Path: path + "/" + pointerToken(name), Want: "no such member: returns does not declare it", Got: "a value"})
	}
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
	index               []int
	omitempty, omitzero bool
}

type structInfo struct {
	list   []fieldInfo
	byName map[string]fieldInfo
}

var structInfos sync.Map // reflect.Type -> *structInfo

// structFields returns the fields encoding/json encodes of struct type t,
// by json name. Embedded structs are not flattened: the binder refuses them
// in a bound result.
func structFields(t reflect.Type) *structInfo {
	if si, ok := structInfos.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{byName: map[string]fieldInfo{}}
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
		fi := fieldInfo{name: name, index: f.Index}
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
