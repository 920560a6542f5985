package loader

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/beam-agents/toolreg"
)

// checkSpec applies the rules schema.cue cannot express to a tool that has
// passed it:
//   - an object declares properties or additionalProperties (else it is
//     untyped: nothing says what its members are);
//   - a pattern is a valid regular expression;
//   - a default satisfies its own schema (type, enum, bounds, lengths, ...).
func checkSpec(s *toolreg.Spec) []toolreg.Problem {
	var ps []toolreg.Problem
	add := func(pos toolreg.Pos, path, format string, args ...any) {
		ps = append(ps, toolreg.Problem{Pos: pos, Tool: s.Name, Path: path, Message: fmt.Sprintf(format, args...)})
	}
	for _, p := range s.Params {
		checkSchema(&p.Schema, p.Pos, "params."+p.Name, add)
	}
	return ps
}

func checkSchema(s *toolreg.Schema, pos toolreg.Pos, path string, add func(toolreg.Pos, string, string, ...any)) {
	if s.Type == toolreg.TypeObject && s.Properties == nil && s.AdditionalProperties == nil {
		add(pos, path, "object has neither properties nor additionalProperties, so its members are untyped: declare properties (a closed object) or additionalProperties (a map)")
	}
	patternOK := true
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil {
			patternOK = false
			add(pos, path+".pattern", "invalid pattern %q: %v", s.Pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	}
	if s.HasDefault && patternOK {
		if msg := defaultProblem(s); msg != "" {
			add(pos, path+".default", "%s", msg)
		}
	}
	if s.Items != nil {
		checkSchema(s.Items, pos, path+".items", add)
	}
	if s.AdditionalProperties != nil {
		checkSchema(s.AdditionalProperties, pos, path+".additionalProperties", add)
	}
	for _, p := range s.Properties {
		checkSchema(&p.Schema, p.Pos, path+".properties."+p.Name, add)
	}
}

// defaultProblem validates a schema's default against the schema itself and
// says what is wrong, or returns "".
func defaultProblem(s *toolreg.Schema) string {
	raw, err := s.MarshalJSON()
	if err != nil {
		return fmt.Sprintf("default cannot be encoded as JSON: %v", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Sprintf("default cannot be encoded as JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const url = "toolreg:param.json"
	if err := c.AddResource(url, doc); err != nil {
		return fmt.Sprintf("param schema is invalid: %v", err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return fmt.Sprintf("param schema is invalid: %v", err)
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
	v, _ := toolreg.CanonicalJSON(s.Default)
	return fmt.Sprintf("default %s does not satisfy its own param: %s; fix the default or the constraint", v, strings.Join(reasons, "; "))
}
