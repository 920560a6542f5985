package loader

import (
	"bytes"
	"fmt"
	"regexp/syntax"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/canonjson"
)

// checkSpec applies the rules schema.cue cannot express to a tool that has
// passed it:
//   - an object declares properties or additionalProperties (else it is
//     untyped: nothing says what its members are);
//   - a pattern is a valid regular expression;
//   - a default satisfies its own schema (type, enum, bounds, lengths, ...).
//
// tree is the tool as written, to find where each problem is.
func (c *checker) checkSpec(s *toolreg.Spec, tree *node) []toolreg.Problem {
	var ps []toolreg.Problem
	add := func(pos toolreg.Pos, path []string, format string, args ...any) {
		if _, p := tree.lookup(path); p.Line > 0 && len(path) > 0 {
			pos = p
		}
		ps = append(ps, toolreg.Problem{Pos: pos, Tool: s.Name, Path: strings.Join(path, "."), Message: fmt.Sprintf(format, args...)})
	}
	for _, p := range s.Params {
		c.checkSchema(&p.Schema, p.Pos, []string{"params", p.Name}, add)
	}
	return ps
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
}

func (c *checker) checkSchema(s *toolreg.Schema, pos toolreg.Pos, path []string, add func(toolreg.Pos, []string, string, ...any)) {
	if s.Type == toolreg.TypeObject && s.Properties == nil && s.AdditionalProperties == nil {
		add(pos, path, "object has neither properties nor additionalProperties, so its members are untyped: declare properties (a closed object) or additionalProperties (a map)")
	}
	patternOK := true
	if s.Pattern != "" {
		// Parsing finds every error compiling would, at a fraction of the cost.
		if _, err := syntax.Parse(s.Pattern, syntax.Perl); err != nil {
			patternOK = false
			add(pos, at(path, "pattern"), "invalid pattern %q: %v: fix the regular expression (Go regexp syntax, RE2)", s.Pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	}
	if s.HasDefault && patternOK {
		if msg := c.defaultProblem(s); msg != "" {
			add(pos, at(path, "default"), "%s", msg)
		}
	}
	if s.Items != nil {
		c.checkSchema(s.Items, pos, at(path, "items"), add)
	}
	if s.AdditionalProperties != nil {
		c.checkSchema(s.AdditionalProperties, pos, at(path, "additionalProperties"), add)
	}
	for _, p := range s.Properties {
		c.checkSchema(&p.Schema, p.Pos, at(path, "properties", p.Name), add)
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
	bare.Default, bare.HasDefault = nil, false
	raw, err := bare.MarshalJSON()
	if err != nil {
		return fmt.Sprintf("param schema cannot be encoded as JSON: %v", err)
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
