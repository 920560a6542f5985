package argcheck

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Checker validates and normalizes one tool's arguments. It is compiled once
// per tool and is safe for concurrent use.
type Checker struct {
	root   *node
	schema *jsonschema.Schema
	strict bool
	canon  *canonPlan // nil: Canonical always defers to Check
	plans  sync.Map   // reflect.Type -> *Plan (nil *Plan: none), built once per type
}

// Compile compiles a tool's parameters JSON Schema. With strict set, values
// are not coerced: they must have their declared JSON type already.
//
// Schemas that differ only in annotations (title, description, examples)
// behave alike, and Compile returns the same *Checker for all of them while
// one is in use anywhere in the process: tools with like params share one.
func Compile(schema []byte, strict bool) (*Checker, error) {
	exact := checkerKey{sum: sha256.Sum256(schema), strict: strict}
	if c := texts.lookup(exact); c != nil {
		return c, nil // these very bytes were compiled: no parse
	}
	k, ok := behaviourKey(schema, strict)
	if !ok {
		return compile(schema, strict)
	}
	c, err := checkers.get(k, func() (*Checker, error) { return compile(schema, strict) })
	if err != nil {
		return nil, err
	}
	return texts.get(exact, func() (*Checker, error) { return c, nil })
}

func compile(schema []byte, strict bool) (*Checker, error) {
	root, err := parseSchema(schema)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("argcheck: parameters schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.UseRegexpEngine(func(s string) (jsonschema.Regexp, error) { return CompilePattern(s) })
	const url = "toolreg:///parameters.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("argcheck: parameters schema: %w", err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("argcheck: parameters schema: %w", err)
	}
	ch := &Checker{root: root, schema: sch, strict: strict}
	ch.canon = ch.canonPlan()
	return ch, nil
}

// Check validates args and returns them normalized: coerced (unless strict),
// nulls for optional members dropped, defaults applied. The map holds decoded
// JSON as encoding/json decodes it with UseNumber. Bad arguments give an
// *Error listing every problem.
//
// Empty args (nothing but whitespace) and a bare null mean no arguments, {}:
// a model calling a tool that takes none often sends one of them. A key given
// twice in one object, at any depth, is refused.
func (c *Checker) Check(args []byte) (map[string]any, error) {
	v, p := parseArgs(args)
	if p != nil {
		return nil, &Error{Problems: []Problem{*p}}
	}
	if ps := duplicateKeys(args); len(ps) > 0 {
		return nil, &Error{Problems: ps}
	}
	var ps []Problem
	guardNumbers(v, "", &ps)
	if len(ps) > 0 {
		return nil, &Error{Problems: ps}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &Error{Problems: []Problem{{Want: wantObject, Got: gotValue(v) + sendOne}}}
	}
	c.normalize(c.root, m)
	int64Range(c.root, m, "", &ps)
	if err := c.schema.Validate(any(m)); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, &Error{Problems: []Problem{{Want: "arguments the validator can read", Got: err.Error()}}}
		}
		ps = sortProblems(c.problems(ve, m, ps))
		return nil, &Error{Problems: ps}
	}
	if len(ps) > 0 {
		return nil, &Error{Problems: sortProblems(ps)}
	}
	return m, nil
}

// int64Range refuses an integer beyond 64 bits wherever the schema n asks for
// an integer in v. JSON Schema sets no such limit, but toolreg does, so that
// what CheckArgs accepts (and Act stages) a tool bound to an int64 field, and
// the effector, can decode: an integer is a 64-bit integer, as in OpenAPI's
// int64 format.
func int64Range(n *node, v any, path string, ps *[]Problem) {
	if n == nil {
		return
	}
	switch x := v.(type) {
	case json.Number:
		if n.typ != "integer" {
			return
		}
		if i, ok := new(big.Int).SetString(string(x), 10); ok && !i.IsInt64() {
			*ps = append(*ps, Problem{Path: path, Want: "a 64-bit integer (-9223372036854775808 to 9223372036854775807)", Got: gotValue(x)})
		}
	case []any:
		for i, e := range x {
			int64Range(n.items, e, path+"/"+strconv.Itoa(i), ps)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			child := n.props[k]
			if child == nil {
				child = n.addl
			}
			int64Range(child, x[k], path+"/"+escapeToken(k), ps)
		}
	}
}

// guardNumbers refuses numbers too large to compare exactly at low cost,
// wherever they are, before the validator turns them into big rationals.
func guardNumbers(v any, path string, ps *[]Problem) {
	switch x := v.(type) {
	case json.Number:
		switch {
		case hugeNumber(string(x)):
			*ps = append(*ps, Problem{Path: path, Want: "a number of at most 400 characters with an exponent below 1000", Got: gotValue(x)})
		case overflowsFloat(string(x)):
			// Canonical JSON writes such a number as a float, and it has none.
			*ps = append(*ps, Problem{Path: path, Want: "a number a float64 can hold (magnitude below 1.8e308)", Got: gotValue(x)})
		}
	case []any:
		for i, e := range x {
			guardNumbers(e, path+"/"+strconv.Itoa(i), ps)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			guardNumbers(x[k], path+"/"+escapeToken(k), ps)
		}
	}
}

// overflowsFloat reports whether a number written with a fraction or an
// exponent is beyond float64's range. Integers written out in full are kept
// digit for digit and need no float.
func overflowsFloat(s string) bool {
	if !strings.ContainsAny(s, ".eE") {
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	return err != nil && math.IsInf(f, 0)
}

// normalize rewrites v in place where the schema n says how: objects drop
// null optional members and gain defaults, scalars are coerced. It returns the
// value to store in v's place.
func (c *Checker) normalize(n *node, v any) any {
	switch x := v.(type) {
	case map[string]any:
		if n.typ != "object" && n.typ != "" {
			return v
		}
		for k, e := range x {
			if p := n.props[k]; p != nil {
				if e == nil && !n.required[k] {
					delete(x, k) // null for an optional member means absent
					continue
				}
				x[k] = c.normalize(p, e)
			} else if n.addl != nil {
				x[k] = c.normalize(n.addl, e)
			}
		}
		for _, k := range n.order {
			p := n.props[k]
			if _, ok := x[k]; !ok && p.hasDefault {
				x[k] = c.normalize(p, deepCopy(p.def))
			}
		}
		return x
	case []any:
		if n.items == nil || (n.typ != "array" && n.typ != "") {
			return v
		}
		for i, e := range x {
			x[i] = c.normalize(n.items, e)
		}
		return x
	}
	return coerce(n.typ, v, c.strict)
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = deepCopy(e)
		}
		return a
	}
	return v
}

func sortProblems(ps []Problem) []Problem {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Want, b.Want)
	})
	// Keep one of each; two keywords can fail the same way at one path.
	return slices.Compact(ps)
}
