package canonjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// encodeFunc appends the canonical JSON of v (the reference's bytes) to b. It
// reports !ok for a value it cannot write as encoding/json would (NaN, a
// cycle, invalid UTF-8): the caller then takes the json.Marshal path, which
// writes it or reports the error.
type encodeFunc func(b []byte, v reflect.Value, depth int) (out []byte, ok bool)

// encoders caches an encodeFunc per type: a tool returns the same type on
// every call, so its fields are looked up, named and sorted once, and each
// result is written in canonical order directly, without encoding/json's
// text and its rewrite (json.Marshal and rewrite take about three times as
// long on a small result struct, most of the effector's cost of an intent).
//
// It writes only what needs none of encoding/json's finer rules: plain
// fields named by their Go name or by a tag name of letters, digits and '_',
// with or without omitempty. A type with anything else (a MarshalJSON or
// MarshalText method, an embedded field, any other tag name or option,
// []byte, json.Number, map keys that are not strings) gets unsupported, and
// takes the json.Marshal path every time, where encoding/json decides.
var encoders sync.Map // reflect.Type -> encodeFunc

// maxDepth bounds the nesting the encoder follows; past it, a value may be
// a cycle, which the json.Marshal path reports.
const maxDepth = 64

func unsupported([]byte, reflect.Value, int) ([]byte, bool) { return nil, false }

// encodeDirect writes v's canonical JSON with its type's cached encoder. It
// writes into a pooled buffer and returns a copy of exactly the bytes
// written: one allocation of the payload's size, whatever its size.
func encodeDirect(v any) ([]byte, bool) {
	rv := reflect.ValueOf(v)
	buf := bufs.Get().(*[]byte)
	defer putBuf(buf)
	out, ok := encoderOf(rv.Type(), nil)((*buf)[:0], rv, 0)
	if !ok {
		return nil, false
	}
	*buf = out
	return bytes.Clone(out), true
}

func encoderOf(t reflect.Type, building map[reflect.Type]*encodeFunc) encodeFunc {
	if f, ok := encoders.Load(t); ok {
		return f.(encodeFunc)
	}
	if p, ok := building[t]; ok { // a recursive type: its encoder is being built
		return func(b []byte, v reflect.Value, depth int) ([]byte, bool) { return (*p)(b, v, depth) }
	}
	if building == nil {
		building = make(map[reflect.Type]*encodeFunc)
	}
	f := new(encodeFunc)
	building[t] = f
	*f = newEncoder(t, building)
	encoders.Store(t, *f)
	return *f
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	numberType        = reflect.TypeFor[json.Number]()
)

func newEncoder(t reflect.Type, building map[reflect.Type]*encodeFunc) encodeFunc {
	pt := reflect.PointerTo(t)
	if t == numberType || pt.Implements(marshalerType) || pt.Implements(textMarshalerType) {
		return unsupported
	}
	switch t.Kind() {
	case reflect.Bool:
		return func(b []byte, v reflect.Value, _ int) ([]byte, bool) { return strconv.AppendBool(b, v.Bool()), true }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(b []byte, v reflect.Value, _ int) ([]byte, bool) { return strconv.AppendInt(b, v.Int(), 10), true }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(b []byte, v reflect.Value, _ int) ([]byte, bool) {
			return strconv.AppendUint(b, v.Uint(), 10), true
		}
	case reflect.Float32:
		return func(b []byte, v reflect.Value, _ int) ([]byte, bool) { return appendFloat(b, v.Float(), 32) }
	case reflect.Float64:
		return func(b []byte, v reflect.Value, _ int) ([]byte, bool) { return appendFloat(b, v.Float(), 64) }
	case reflect.String:
		return func(b []byte, v reflect.Value, _ int) ([]byte, bool) { return appendString(b, v.String()) }
	case reflect.Interface:
		return encodeInterface
	case reflect.Pointer:
		return pointerEncoder(encoderOf(t.Elem(), building))
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return unsupported // base64, or a byte type's own methods
		}
		return sliceEncoder(encoderOf(t.Elem(), building), true)
	case reflect.Array:
		return sliceEncoder(encoderOf(t.Elem(), building), false)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return unsupported
		}
		return mapEncoder(encoderOf(t.Elem(), building))
	case reflect.Struct:
		return structEncoder(t, building)
	}
	return unsupported // chan, func, complex: json.Marshal refuses them
}

// bufs holds the buffers encodeDirect writes into.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// putBuf returns buf to bufs, unless a large value grew it: one huge result
// must not pin its buffer.
func putBuf(buf *[]byte) {
	if cap(*buf) <= 64<<10 {
		bufs.Put(buf)
	}
}

// appendFloat writes f as encoding/json writes it (an integer stays integer
// text, "10") and then as Canonicalize rewrites that text: a non-integer in
// Python's float repr.
func appendFloat(b []byte, f float64, bits int) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	abs, format := math.Abs(f), byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	var buf [32]byte
	text := strconv.AppendFloat(buf[:0], f, format, -1, bits)
	if !strings.ContainsAny(string(text), ".eE") {
		return append(b, text...), true
	}
	g, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		return nil, false
	}
	return AppendFloat(b, g), true
}

// appendString writes s; encoding/json replaces each invalid byte, which the
// json.Marshal path does.
func appendString(b []byte, s string) ([]byte, bool) {
	if !utf8.ValidString(s) {
		return nil, false
	}
	return AppendString(b, s), true
}

func encodeInterface(b []byte, v reflect.Value, depth int) ([]byte, bool) {
	if v.IsNil() {
		return append(b, "null"...), true
	}
	e := v.Elem()
	return encoderOf(e.Type(), nil)(b, e, depth)
}

func pointerEncoder(elem encodeFunc) encodeFunc {
	return func(b []byte, v reflect.Value, depth int) ([]byte, bool) {
		if v.IsNil() {
			return append(b, "null"...), true
		}
		if depth++; depth > maxDepth {
			return nil, false
		}
		return elem(b, v.Elem(), depth)
	}
}

func sliceEncoder(elem encodeFunc, nilable bool) encodeFunc {
	return func(b []byte, v reflect.Value, depth int) ([]byte, bool) {
		if nilable && v.IsNil() {
			return append(b, "null"...), true
		}
		if depth++; depth > maxDepth {
			return nil, false
		}
		b = append(b, '[')
		for i := range v.Len() {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = elem(b, v.Index(i), depth); !ok {
				return nil, false
			}
		}
		return append(b, ']'), true
	}
}

func mapEncoder(elem encodeFunc) encodeFunc {
	return func(b []byte, v reflect.Value, depth int) ([]byte, bool) {
		if v.IsNil() {
			return append(b, "null"...), true
		}
		if depth++; depth > maxDepth {
			return nil, false
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(x.String(), y.String()) })
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendString(b, k.String()); !ok {
				return nil, false // two invalid keys could become one
			}
			b = append(b, ':')
			if b, ok = elem(b, v.MapIndex(k), depth); !ok {
				return nil, false
			}
		}
		return append(b, '}'), true
	}
}

type fieldEncoder struct {
	index     int
	name      string // what the fields are sorted by
	key       []byte // `"name":`
	omitEmpty bool
	enc       encodeFunc
}

// structEncoder writes the fields encoding/json would, in the order of their
// names.
func structEncoder(t reflect.Type, building map[reflect.Type]*encodeFunc) encodeFunc {
	var fields []fieldEncoder
	names := make(map[string]bool)
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return unsupported // embedded fields are promoted by encoding/json's rules
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		omitEmpty := opts == "omitempty"
		if opts != "" && !omitEmpty || !isPlainName(name) {
			return unsupported // a name or an option encoding/json has its own rules for
		}
		if names[name] {
			return unsupported // encoding/json drops both of two same-named fields
		}
		names[name] = true
		fields = append(fields, fieldEncoder{
			index:     i,
			name:      name,
			key:       append(AppendString(nil, name), ':'),
			omitEmpty: omitEmpty,
			enc:       encoderOf(sf.Type, building),
		})
	}
	// By name, not by the quoted key: the closing quote would put "a!" and
	// "a b" before "a".
	slices.SortFunc(fields, func(x, y fieldEncoder) int { return strings.Compare(x.name, y.name) })
	return func(b []byte, v reflect.Value, depth int) ([]byte, bool) {
		if depth++; depth > maxDepth {
			return nil, false
		}
		b = append(b, '{')
		first := true
		for i := range fields {
			f := &fields[i]
			fv := v.Field(f.index)
			if f.omitEmpty && isEmptyValue(fv) {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, f.key...)
			var ok bool
			if b, ok = f.enc(b, fv, depth); !ok {
				return nil, false
			}
		}
		return append(b, '}'), true
	}
}

// isPlainName reports whether a field name is letters, digits and '_' only:
// a name encoding/json takes as it stands and canonical JSON writes
// unescaped.
func isPlainName(s string) bool {
	for _, c := range s {
		if c != '_' && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return s != ""
}

// isEmptyValue is omitempty's test, as encoding/json states it.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}
