package loader

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/canonjson"
	"github.com/beam-agents/toolreg/internal/pattern"
)

// checkSpec applies the rules schema.cue cannot express to a tool:
//   - an object declares properties or additionalProperties (else it is
//     untyped: nothing says what its members are);
//   - a pattern is a valid regular expression, and means the same in RE2
//     and in ECMA-262 (package internal/pattern);
//   - a default satisfies its own schema (type, enum, bounds, lengths, ...).
//
// tree is the tool as written, to find where each problem is. known are the
// problems already found in the tool (by the schema): a rule is not applied to
// a part of the tool they are about, where it would only repeat them.
func (c *checker) checkSpec(s *toolreg.Spec, tree *node, known []toolreg.Problem) []toolreg.Problem {
	var ps []toolreg.Problem
	add := func(pos toolreg.Pos, path []string, format string, args ...any) {
		if _, p := tree.lookup(path); p.Line > 0 && len(path) > 0 {
			pos = p
		}
		ps = append(ps, toolreg.Problem{Pos: pos, Tool: s.Name, Path: strings.Join(path, "."), Message: fmt.Sprintf(format, args...)})
	}
	t := tainted(known)
	checkNumbers(tree, nil, t, add)
	for _, p := range s.Params {
		c.checkSchema(&p.Schema, p.Pos, []string{"params", p.Name}, t, add)
	}
	if n, _, ok := tree.get("approval_timeout"); ok && n.kind == kindString && !t.touches([]string{"approval_timeout"}) {
		if d, err := time.ParseDuration(n.text); err != nil || d <= 0 {
			add(s.Pos, []string{"approval_timeout"}, "approval_timeout %q is not a positive duration a Go program can hold: use one such as \"30m\" or \"24h\"", n.text)
		}
	}
	if s.Returns != nil {
		_, pos := tree.lookup([]string{"returns"})
		c.checkSchema(s.Returns, pos, []string{"returns"}, t, add)
	}
	window := []string{"budgets", toolreg.BudgetPerEntity, "window"}
	badWindow := false
	if n, _ := tree.lookup(window); n != nil && n.kind == kindString && !t.touches(window) {
		if _, err := time.ParseDuration(n.text); err != nil {
			badWindow = true
			add(s.Pos, window, "window %q is not a duration a Go program can hold: use one such as \"1h\" or \"24h\"", n.text)
		}
	}
	// Spec.Validate holds the rules of scopes and budgets (a Spec built in
	// Go meets them too); here they get the manifest's positions.
	var de *toolreg.ToolDefinitionError
	if err := s.Validate(); errors.As(err, &de) {
		for _, p := range de.Problems {
			if !strings.HasPrefix(p.Path, "scopes") && !strings.HasPrefix(p.Path, "budgets") {
				continue
			}
			path := strings.Split(p.Path, ".")
			if t.touches(path) || badWindow && p.Path == strings.Join(window, ".") {
				continue
			}
			add(s.Pos, path, "%s", p.Message)
		}
	}
	return ps
}

// taint tells which parts of a tool problems are already known about.
type taint struct {
	at     map[string]bool // the paths problems are about
	within map[string]bool // those paths and every path above them
}

func tainted(ps []toolreg.Problem) taint {
	t := taint{at: map[string]bool{}, within: map[string]bool{}}
	for _, p := range ps {
		t.at[p.Path] = true
		for path := p.Path; path != ""; {
			t.within[path] = true
			i := strings.LastIndexByte(path, '.')
			if i < 0 {
				break
			}
			path = path[:i]
		}
	}
	return t
}

// touches reports whether a known problem is about path, a path inside it, or
// a path above it.
func (t taint) touches(path []string) bool {
	if len(t.at) == 0 {
		return false
	}
	if t.within[strings.Join(path, ".")] {
		return true
	}
	for i := len(path) - 1; i > 0; i-- {
		if t.at[strings.Join(path[:i], ".")] {
			return true
		}
	}
	return false
}

// at returns path extended by elems, in a slice of its own.
func at(path []string, elems ...string) []string {
	return append(path[:len(path):len(path)], elems...)
}

// checker checks specs for one Load call. It keeps the param schemas it has
// compiled, by their JSON, for the defaults of the params that share them: a
// registry's tools repeat their params (customer_id, limit, ...) often.
type checker struct {
	schemas sync.Map // JSON Schema text (without default) -> *jsonschema.Schema or error
	clean   sync.Map // paramShape of a param #Param accepts, "tool:"+toolShape of a tool #Tool accepts -> true
	// fits holds schema text + NUL + canonical default of each default
	// found to satisfy its schema: a registry repeats its defaults.
	fits sync.Map
}

func (c *checker) checkSchema(s *toolreg.Schema, pos toolreg.Pos, path []string, t taint, add func(toolreg.Pos, []string, string, ...any)) {
	if s.Type == toolreg.TypeObject && s.Properties == nil && s.AdditionalProperties == nil &&
		!t.touches(at(path, "properties")) && !t.touches(at(path, "additionalProperties")) && !t.touches(at(path, "type")) {
		add(pos, path, "object has neither properties nor additionalProperties, so its members are untyped: declare properties (a closed object) or additionalProperties (a map)")
	}
	patternOK := true
	if s.Pattern != "" && !t.touches(at(path, "pattern")) {
		if msg := patternProblem(s.Pattern); msg != "" {
			patternOK = false
			add(pos, at(path, "pattern"), "%s", msg)
		}
	}
	if s.Type == toolreg.TypeInteger && !t.touches(path) {
		wide := func(v any) bool {
			n, ok := v.(json.Number)
			i, isInt := new(big.Int).SetString(string(n), 10)
			return ok && isInt && !i.IsInt64()
		}
		if s.HasDefault && wide(s.Default) {
			add(pos, at(path, "default"), "default %s is beyond a 64-bit integer, which is what toolreg checks an integer param against (so that a tool bound to an int64 can decode every call): use a default from -9223372036854775808 to 9223372036854775807", short(fmt.Sprint(s.Default)))
		}
		for i, e := range s.Enum {
			if wide(e) {
				add(pos, at(path, "enum", strconv.Itoa(i)), "enum value %s is beyond a 64-bit integer, so no call can send it: use values from -9223372036854775808 to 9223372036854775807", short(fmt.Sprint(e)))
			}
		}
	}
	if s.HasDefault && patternOK && !t.touches(path) {
		if msg := c.defaultProblem(s); msg != "" {
			add(pos, at(path, "default"), "%s", msg)
		}
	}
	if s.Items != nil {
		c.checkSchema(s.Items, pos, at(path, "items"), t, add)
	}
	if s.AdditionalProperties != nil {
		c.checkSchema(s.AdditionalProperties, pos, at(path, "additionalProperties"), t, add)
	}
	for _, p := range s.Properties {
		c.checkSchema(&p.Schema, p.Pos, at(path, "properties", p.Name), t, add)
	}
}

// compileSchema compiles a param's JSON Schema, or returns why it cannot.
func compileSchema(raw []byte) any {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const url = "toolreg:param.json"
	if err := c.AddResource(url, doc); err != nil {
		return err
	}
	sch, err := c.Compile(url)
	if err != nil {
		return err
	}
	return sch
}

// defaultProblem validates a schema's default against the schema itself and
// says what is wrong, or returns "".
func (c *checker) defaultProblem(s *toolreg.Schema) string {
	bare := *s
	// The description validates nothing: without it, params that differ
	// only in words share one compiled schema.
	bare.Default, bare.HasDefault, bare.Description = nil, false, ""
	raw, err := bare.MarshalJSON()
	if err != nil {
		return fmt.Sprintf("param schema cannot be encoded as JSON: %v", err)
	}
	fit := ""
	if def, err := canonjson.Marshal(s.Default); err == nil {
		fit = string(raw) + "\x00" + string(def)
		if _, ok := c.fits.Load(fit); ok {
			return ""
		}
	}
	cached, ok := c.schemas.Load(string(raw))
	if !ok {
		cached, _ = c.schemas.LoadOrStore(string(raw), compileSchema(raw))
	}
	sch, ok := cached.(*jsonschema.Schema)
	if !ok {
		return fmt.Sprintf("param schema is invalid: %v", cached)
	}
	err = sch.Validate(s.Default)
	if err == nil {
		if fit != "" {
			c.fits.Store(fit, true)
		}
		return ""
	}
	var reasons []string
	for _, line := range strings.Split(err.Error(), "\n") {
		if r, ok := strings.CutPrefix(strings.TrimSpace(line), "- at "); ok {
			if at, why, ok := strings.Cut(r, ": "); ok {
				if at == "''" {
					r = why
				} else {
					r = strings.Trim(at, "'") + ": " + why
				}
			}
			reasons = append(reasons, r)
		}
	}
	if len(reasons) == 0 {
		reasons = append(reasons, err.Error())
	}
	v, _ := canonjson.Marshal(s.Default)
	return fmt.Sprintf("default %s does not satisfy its own param: %s; fix the default or the constraint", v, strings.Join(reasons, "; "))
}

// patternProblem says what is wrong with a pattern, or returns "".
func patternProblem(p string) string {
	err := pattern.Check(p)
	var pe *pattern.Error
	if !errors.As(err, &pe) {
		return ""
	}
	if pe.Construct == p {
		return fmt.Sprintf("invalid pattern %s: %s: fix the regular expression (Go regexp syntax, RE2)", quoteShort(p), strings.TrimSuffix(strings.TrimPrefix(pe.Why, "is not a valid regular expression ("), ")"))
	}
	return fmt.Sprintf("pattern %s is read differently by RE2 (toolreg) and ECMA-262 (JSON Schema consumers: JavaScript, ajv): %s at offset %d %s: %s",
		code(p), code(pe.Construct), pe.Offset, pe.Why, pe.Portable)
}

// checkNumbers refuses a number beyond what a float64 holds (1e999999,
// 1e-400): JSON Schema consumers hold numbers in one (JavaScript's Number),
// and so does toolreg's check of an argument against a bound.
func checkNumbers(n *node, path []string, t taint, add func(toolreg.Pos, []string, string, ...any)) {
	switch n.kind {
	case kindInt, kindFloat:
		f, err := strconv.ParseFloat(n.text, 64)
		if err == nil || t.touches(path) {
			return
		}
		what := "beyond the largest number a float64 holds (about ±1.8e308)"
		if !math.IsInf(f, 0) {
			what = "too small for a float64 to tell from 0 (below about 4.9e-324)"
		}
		name := "value"
		if len(path) > 0 {
			name = path[len(path)-1]
		}
		add(n.pos, path, "%s %s is %s, which JSON Schema consumers (JavaScript) and toolreg's checks hold numbers in: use a number within float64's range", name, short(n.text), what)
	case kindList:
		for i, it := range n.items {
			checkNumbers(it, at(path, strconv.Itoa(i)), t, add)
		}
	case kindMap:
		for i, k := range n.keys {
			checkNumbers(n.vals[i], at(path, k), t, add)
		}
	}
}
