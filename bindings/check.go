package bindings

import (
	"encoding"
	"encoding/json"
	"math/big"
	"reflect"
	"slices"
	"strings"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/editdist"
	"github.com/beam-agents/toolreg/internal/goname"
)

// checker compares a binding's Go types with its manifest and adds a problem
// for every disagreement.
type checker struct {
	ps      *problems
	tool    string
	toolPos toolreg.Pos
	// result is set while the result type R is checked against the
	// manifest's returns, where the rules of presence differ: see checkStruct.
	result bool
}

// noun is what the manifest calls a member in messages.
func (c *checker) noun() string {
	if c.result {
		return "result property"
	}
	return "param"
}

func (c *checker) add(pos toolreg.Pos, path, format string, args ...any) {
	if !pos.IsValid() {
		pos = c.toolPos
	}
	c.ps.add(pos, c.tool, path, format, args...)
}

// checkArgs checks the argument type A against the manifest's params.
func (c *checker) checkArgs(t reflect.Type, spec *toolreg.Spec) {
	if t.Kind() != reflect.Struct {
		fix := "use a struct whose exported fields are the manifest's params by json name"
		if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
			fix = "take the struct " + typeName(t.Elem()) + " itself, not a pointer to it"
		}
		c.add(spec.Pos, "params", "the function's argument type %s is not a struct: %s", typeName(t), fix)
		return
	}
	c.checkStruct(t, typeName(t), spec.Params, "params", spec.Pos)
}

// checkStruct checks that the exported fields of struct t are exactly props,
// by json name, each of a type that can hold its param's values. goPath names t
// in messages; path is the manifest path of props; pos is where the object
// holding props is declared.
func (c *checker) checkStruct(t reflect.Type, goPath string, props []*toolreg.Param, path string, pos toolreg.Pos) {
	fields := make(map[string]reflect.StructField)
	var order []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		name, opts, skip := jsonName(f)
		if skip {
			continue
		}
		if f.Anonymous {
			c.add(pos, path, "field %s.%s is embedded: give it a name and a json tag, one field per param", goPath, f.Name)
			continue
		}
		if slices.Contains(strings.Split(opts, ","), "string") {
			c.add(pos, path, "field %s.%s has the json option \"string\", which changes how the value is encoded: remove it and give the field the param's own type", goPath, f.Name)
		}
		if prev, ok := fields[name]; ok {
			c.add(pos, path, "fields %s.%s and %s.%s both have json name %q: keep one", goPath, prev.Name, goPath, f.Name, name)
			continue
		}
		fields[name] = f
		order = append(order, name)
	}

	named := make(map[string]bool, len(props))
	for _, p := range props {
		named[p.Name] = true
		pp := path + "." + p.Name
		f, ok := fields[p.Name]
		if !ok {
			c.add(p.Pos, pp, "%s %q has no field in %s: add %s %s `json:%q`",
				c.noun(), p.Name, goPath, exportName(p.Name), c.goTypeFor(&p.Schema, p.Required() || p.HasDefault), p.Name+c.omitempty(p))
			continue
		}
		if c.result {
			c.checkPresence(f, p, goPath+"."+f.Name, pp)
			c.checkValue(f.Type, &p.Schema, !p.Required() || f.Type.Kind() != reflect.Pointer, goPath+"."+f.Name, pp, p.Pos)
			continue
		}
		c.checkValue(f.Type, &p.Schema, p.Required() || p.HasDefault, goPath+"."+f.Name, pp, p.Pos)
	}
	for _, name := range order {
		if named[name] {
			continue
		}
		f := fields[name]
		if c.result {
			c.add(pos, path, "field %s.%s (json %q) is not in the manifest's returns: declare property %q there, or remove the field, or tag it json:\"-\"",
				goPath, f.Name, name, name)
			continue
		}
		c.add(pos, path, "field %s.%s (json %q) is no param of the manifest: declare param %q in the manifest, or remove the field, or tag it json:\"-\"",
			goPath, f.Name, name, name)
	}
}

// checkResultType checks the result type R against the manifest's returns,
// with the rules of argument structs, turned around: a result property the
// manifest requires must always be encoded (no omitempty, no pointer that may
// be nil), and an optional one that may be nil must be left out when it is
// (omitempty), since a null is no value of its type. R itself may be a
// pointer (a nil one is refused when the tool returns it).
func (c *checker) checkResultType(t reflect.Type, spec *toolreg.Spec) {
	if spec.Returns == nil {
		return
	}
	c.result = true
	defer func() { c.result = false }()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	c.checkValue(t, spec.Returns, true, typeName(t), "returns", spec.Pos)
}

// checkPresence applies the result's rules of presence to field f of
// property p.
func (c *checker) checkPresence(f reflect.StructField, p *toolreg.Param, goPath, path string) {
	_, opts, _ := jsonName(f)
	tagOpts := strings.Split(opts, ",")
	omit := slices.Contains(tagOpts, "omitempty") || slices.Contains(tagOpts, "omitzero")
	nilable := false
	switch f.Type.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		nilable = true
	}
	switch {
	case p.Required() && omit:
		c.add(p.Pos, path, "field %s has omitempty, so a zero value leaves out a property the manifest's returns requires: remove omitempty, or mark the property required: false", goPath)
	case p.Required() && f.Type.Kind() == reflect.Pointer:
		c.add(p.Pos, path, "field %s is a pointer (%s) but the manifest's returns requires the property, and a nil pointer encodes as null: use %s, or mark the property required: false",
			goPath, typeName(f.Type), c.goTypeFor(&p.Schema, true))
	case !p.Required() && nilable && !omit:
		c.add(p.Pos, path, "field %s (%s) encodes nil as null, which is no %s: add omitempty to its json tag, so that nil leaves the optional property out",
			goPath, typeName(f.Type), describe(&p.Schema))
	}
}

// omitempty is the tag option a suggested field of p needs.
func (c *checker) omitempty(p *toolreg.Param) string {
	if c.result && !p.Required() {
		return ",omitempty"
	}
	return ""
}

// goTypeFor is goTypeFor, with the result's rule: an optional result
// property is a pointer only when its zero value is one the manifest allows
// (which the binder cannot know), so it is suggested as the value type.
func (c *checker) goTypeFor(s *toolreg.Schema, present bool) string {
	if c.result {
		return goTypeFor(s, true)
	}
	return goTypeFor(s, present)
}

// checkValue checks that a field (or element) of type t can hold the values of
// schema s. present is true when the value is always there (a required or
// defaulted param, an array element, a map value), which asks for a
// non-pointer type; false asks for a pointer.
func (c *checker) checkValue(t reflect.Type, s *toolreg.Schema, present bool, goPath, path string, pos toolreg.Pos) {
	base := t
	if t.Kind() == reflect.Pointer {
		base = t.Elem()
	}
	if base.Kind() == reflect.Interface {
		c.add(pos, path, "field %s is untyped (%s) but the manifest declares type %s: give it a concrete type, such as %s",
			goPath, typeName(t), s.Type, c.goTypeFor(s, present))
		return
	}
	if c.result && (base.Implements(jsonMarshaler) || base.Implements(textMarshaler) ||
		reflect.PointerTo(base).Implements(jsonMarshaler) || reflect.PointerTo(base).Implements(textMarshaler)) {
		return // it encodes itself: what it writes is checked when the tool returns
	}
	switch {
	case c.result:
		// Presence is checkPresence's.
	case present && t.Kind() == reflect.Pointer:
		c.add(pos, path, "field %s is a pointer (%s) but the param is always present (required, or has a default): use %s",
			goPath, typeName(t), goTypeFor(s, true))
	case !present && t.Kind() != reflect.Pointer:
		c.add(pos, path, "field %s (%s) cannot tell an absent optional param from a zero one: use the pointer %s, or give the param a default in the manifest",
			goPath, typeName(t), "*"+typeName(t))
	}

	wrong := func(want string) {
		c.add(pos, path, "field %s has type %s, which cannot hold the manifest's %s values: use %s",
			goPath, typeName(base), describe(s), want)
	}
	k := base.Kind()
	switch s.Type {
	case toolreg.TypeString:
		if k != reflect.String {
			wrong(goTypeFor(s, true))
		}
	case toolreg.TypeInteger:
		if !isInt(k) && !isUint(k) {
			wrong(goTypeFor(s, true))
			return
		}
		if !c.result { // a result's bounds are checked when the tool returns
			c.checkIntRange(base, s, goPath, path, pos)
		}
	case toolreg.TypeNumber:
		if k != reflect.Float32 && k != reflect.Float64 {
			wrong("float64")
		}
	case toolreg.TypeBoolean:
		if k != reflect.Bool {
			wrong("bool")
		}
	case toolreg.TypeArray:
		if k != reflect.Slice {
			wrong(goTypeFor(s, true))
			return
		}
		if s.Items == nil {
			c.add(pos, path+".items", "array param has no items schema, so field %s's element type cannot be checked: declare items (with a type) in the manifest", goPath)
			return
		}
		c.checkValue(base.Elem(), s.Items, true, goPath+"[]", path+".items", pos)
	case toolreg.TypeObject:
		switch {
		case len(s.Properties) > 0 && s.AdditionalProperties != nil:
			c.add(pos, path, "the manifest's object has both properties and additionalProperties, which no Go type holds exactly: drop one of them in the manifest")
		case s.AdditionalProperties != nil:
			if k != reflect.Map || base.Key().Kind() != reflect.String {
				wrong(goTypeFor(s, true))
				return
			}
			c.checkValue(base.Elem(), s.AdditionalProperties, true, goPath+"[key]", path+".additionalProperties", pos)
		default:
			if k != reflect.Struct {
				wrong(goTypeFor(s, true))
				return
			}
			c.checkStruct(base, goPath, s.Properties, path+".properties", pos)
		}
	default:
		// An unknown or missing type is reported by Spec.Validate.
	}
}

// checkIntRange refuses an integer kind that cannot hold every value the
// manifest's bounds allow: an unsigned kind needs minimum >= 0, and a kind
// narrower than 64 bits needs both bounds inside its range.
func (c *checker) checkIntRange(t reflect.Type, s *toolreg.Schema, goPath, path string, pos toolreg.Pos) {
	lo, hi := lowerBound(s), upperBound(s)
	bits := uint(t.Bits())
	one := big.NewInt(1)
	var tlo, thi *big.Int
	if isUint(t.Kind()) {
		tlo, thi = new(big.Int), new(big.Int).Sub(new(big.Int).Lsh(one, bits), one)
	} else {
		tlo = new(big.Int).Neg(new(big.Int).Lsh(one, bits-1))
		thi = new(big.Int).Sub(new(big.Int).Lsh(one, bits-1), one)
	}
	// An int64 field holds every integer CheckArgs accepts (it refuses
	// integers beyond 64 bits), so only narrower kinds and unsigned ones
	// need bounds from the manifest.
	narrow := bits < 64
	switch {
	case isUint(t.Kind()) && (lo == nil || lo.Sign() < 0):
		c.add(pos, path, "field %s has unsigned type %s but the manifest allows negative integers: add minimum: 0 to the param, or use int64", goPath, typeName(t))
	case narrow && (lo == nil || hi == nil || lo.Cmp(tlo) < 0 || hi.Cmp(thi) > 0):
		c.add(pos, path, "field %s has type %s, which holds %s..%s, but the manifest allows %s: give the param minimum and maximum inside that range, or use int64",
			goPath, typeName(t), tlo, thi, boundsText(lo, hi))
	}
}

// lowerBound is the least integer the schema's bounds allow, exactly, or nil.
func lowerBound(s *toolreg.Schema) *big.Int {
	switch {
	case s.Minimum != "":
		return intBound(s.Minimum, false, true)
	case s.ExclusiveMinimum != "":
		return intBound(s.ExclusiveMinimum, true, true)
	}
	return nil
}

// upperBound is the greatest integer the schema's bounds allow, or nil.
func upperBound(s *toolreg.Schema) *big.Int {
	switch {
	case s.Maximum != "":
		return intBound(s.Maximum, false, false)
	case s.ExclusiveMaximum != "":
		return intBound(s.ExclusiveMaximum, true, false)
	}
	return nil
}

// intBound turns a bound into the integer bound it makes: the least integer
// above (lower) or the greatest below it, strictly when exclusive.
func intBound(n json.Number, exclusive, lower bool) *big.Int {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return nil
	}
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // floor
	whole := m.Sign() == 0
	one := big.NewInt(1)
	switch {
	case lower && (!whole || exclusive):
		q.Add(q, one)
	case !lower && whole && exclusive:
		q.Sub(q, one)
	}
	return q
}

func boundsText(lo, hi *big.Int) string {
	f := func(v *big.Int, inf string) string {
		if v == nil {
			return inf
		}
		return v.String()
	}
	return f(lo, "-inf") + ".." + f(hi, "+inf")
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// checkResult refuses a result type R that encoding/json cannot encode.
func (c *checker) checkResult(t reflect.Type, fnType reflect.Type) {
	if bad, why := unencodable(t, "R", map[reflect.Type]bool{}); bad != "" {
		c.add(c.toolPos, "", "the result type %s of %s cannot be encoded as JSON: %s is %s: return a type encoding/json can encode",
			typeName(t), typeName(fnType), bad, why)
	}
}

// unencodable returns the path inside t of a part encoding/json refuses, and
// what it is; "" when t encodes. An interface passes: its dynamic value is
// not known until the call.
func unencodable(t reflect.Type, path string, seen map[reflect.Type]bool) (string, string) {
	if seen[t] {
		return "", ""
	}
	seen[t] = true
	if t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return "", ""
	}
	switch t.Kind() {
	case reflect.Chan:
		return path, "a channel"
	case reflect.Func:
		return path, "a func"
	case reflect.Complex64, reflect.Complex128:
		return path, "a complex number"
	case reflect.UnsafePointer:
		return path, "an unsafe.Pointer"
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return unencodable(t.Elem(), path+"[]", seen)
	case reflect.Map:
		k := t.Key()
		if k.Kind() != reflect.String && !isInt(k.Kind()) && !isUint(k.Kind()) && !k.Implements(textMarshaler) {
			return path + "[key]", "a " + typeName(k) + " map key"
		}
		return unencodable(t.Elem(), path+"[value]", seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous {
				continue
			}
			if _, _, skip := jsonName(f); skip {
				continue
			}
			if bad, why := unencodable(f.Type, path+"."+f.Name, seen); bad != "" {
				return bad, why
			}
		}
	}
	return "", ""
}

// jsonName returns the name encoding/json gives field f, its tag options, and
// whether the field is skipped (json:"-").
func jsonName(f reflect.StructField) (name, opts string, skip bool) {
	tag, ok := f.Tag.Lookup("json")
	if tag == "-" {
		return "", "", true
	}
	name, opts, _ = strings.Cut(tag, ",")
	if !ok || name == "" {
		name = f.Name
	}
	return name, opts, false
}

func isInt(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return true
	}
	return false
}

func isUint(k reflect.Kind) bool {
	switch k {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// goTypeFor suggests the Go type for schema s: a pointer when the value may
// be absent.
func goTypeFor(s *toolreg.Schema, present bool) string {
	var g string
	switch s.Type {
	case toolreg.TypeString:
		g = "string"
	case toolreg.TypeInteger:
		g = "int"
	case toolreg.TypeNumber:
		g = "float64"
	case toolreg.TypeBoolean:
		g = "bool"
	case toolreg.TypeArray:
		if s.Items != nil {
			g = "[]" + goTypeFor(s.Items, true)
			if strings.HasPrefix(g, "[]a ") {
				g = "a slice of structs with one field per property"
			}
		} else {
			g = "a slice"
		}
	case toolreg.TypeObject:
		if s.AdditionalProperties != nil {
			g = "map[string]" + goTypeFor(s.AdditionalProperties, true)
		} else {
			g = "a struct with one field per property"
		}
	default:
		g = "the manifest's type"
	}
	if !present && !strings.HasPrefix(g, "a ") {
		g = "*" + g
	}
	return g
}

// describe names schema s's values for messages: "integer", "array of string".
func describe(s *toolreg.Schema) string {
	switch {
	case s.Type == toolreg.TypeArray && s.Items != nil:
		return "array of " + describe(s.Items)
	case s.Type == toolreg.TypeObject && s.AdditionalProperties != nil:
		return "object of " + describe(s.AdditionalProperties)
	}
	return string(s.Type)
}

// exportName suggests the Go field for a param, as toolreg gen names it.
func exportName(name string) string {
	if n := goname.Exported(name); n != "" {
		return n
	}
	return "Field"
}

// typeName renders t as Go source spells it, without package paths' noise.
func typeName(t reflect.Type) string {
	if t == nil {
		return "nil"
	}
	return t.String()
}

// didYouMean suggests a declared tool name close to name.
func didYouMean(name string, specs []*toolreg.Spec) string {
	best, bestD := "", 3
	var rows []int
	for _, s := range specs {
		if s == nil {
			continue
		}
		var d int
		if d, rows = editdist.Levenshtein(name, s.Name, rows); d < bestD {
			best, bestD = s.Name, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + `"` + best + `"?)`
}
