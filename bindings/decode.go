package bindings

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/argcheck"
)

// newDecoder compiles, once, the function that turns a call's raw JSON
// arguments into the bound function's argument value A: it validates them
// against spec's parameters schema (coercing as Tool.CheckArgs does unless
// spec.Strict), applies defaults, treats a null for a param that is not
// required as absent, and decodes into A. Bad arguments give a
// *toolreg.ToolArgumentError listing every failing path. The error of
// newDecoder itself is a *toolreg.ToolDefinitionError: the schema does not
// compile (a bad pattern, say).
func newDecoder[A any](spec *toolreg.Spec) (func(json.RawMessage) (A, error), error) {
	c, err := argcheck.Compile(spec.ParametersSchema(), spec.Strict)
	if err != nil {
		return nil, &toolreg.ToolDefinitionError{Problems: []toolreg.Problem{{
			Pos: spec.Pos, Tool: spec.Name, Path: "params",
			Message: err.Error() + ": fix the manifest's params",
		}}}
	}
	name := spec.Name
	return func(raw json.RawMessage) (A, error) {
		var a A
		m, err := c.Check(raw)
		if err != nil {
			return a, toolreg.ArgumentErrorFrom(name, err)
		}
		norm, err := toolreg.CanonicalJSON(m)
		if err != nil {
			return a, &toolreg.ToolArgumentError{Tool: name, Problems: []toolreg.ArgProblem{{Want: "arguments that encode as JSON", Got: err.Error()}}}
		}
		if err := json.Unmarshal(norm, &a); err != nil {
			return a, &toolreg.ToolArgumentError{Tool: name, Problems: []toolreg.ArgProblem{unmarshalProblem(err)}}
		}
		return a, nil
	}, nil
}

// unmarshalProblem explains a value that passed the schema but does not fit
// its Go field: 300 for an int8, -1 for a uint, 1e400 for a float64.
func unmarshalProblem(err error) toolreg.ArgProblem {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		path := ""
		if te.Field != "" {
			path = "/" + strings.ReplaceAll(te.Field, ".", "/")
		}
		return toolreg.ArgProblem{
			Path: path,
			Want: fmt.Sprintf("a value that fits the tool's Go type %s", te.Type),
			Got:  te.Value,
		}
	}
	return toolreg.ArgProblem{Want: "arguments that decode into the tool's Go type", Got: err.Error()}
}
