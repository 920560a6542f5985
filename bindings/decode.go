package bindings

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/canonjson"
	"github.com/beam-agents/toolreg/internal/argcheck"
	"github.com/beam-agents/toolreg/internal/toolbind"
)

// newDecoder compiles, once, the function that turns a call's raw JSON
// arguments into the bound function's argument value A: it validates them
// against spec's parameters schema (coercing as Tool.CheckArgs does unless
// spec.Strict), applies defaults, treats a null for a param that is not
// required as absent, and decodes into A. Bad arguments give a
// *toolreg.ToolArgumentError listing every failing path. The error of
// newDecoder itself is a *toolreg.ToolDefinitionError: the schema does not
// compile (a bad pattern, say).
//
// A valid call whose values already have their JSON types is decoded by a
// plan that validates while it decodes straight into A (argcheck.Plan);
// anything else takes the reference path, which gives the same results.
func newDecoder[A any](spec *toolreg.Spec) (func(json.RawMessage) (A, error), error) {
	d, err := compileDecoder[A](spec)
	if err != nil {
		return nil, err
	}
	return d.decode, nil
}

// argDecoder holds both paths so that tests can hold one to the other.
type argDecoder[A any] struct {
	tool  string
	check *argcheck.Checker
	plan  *argcheck.Plan // nil: A or the schema has a shape the plan does not handle
}

func compileDecoder[A any](spec *toolreg.Spec) (*argDecoder[A], error) {
	c, err := argcheck.Compile(argsSchema(spec), spec.Strict)
	if err != nil {
		return nil, &toolreg.ToolDefinitionError{Problems: []toolreg.Problem{{
			Pos: spec.Pos, Tool: spec.Name, Path: "params",
			Message: err.Error() + ": fix the manifest's params",
		}}}
	}
	return &argDecoder[A]{tool: spec.Name, check: c, plan: c.Plan(reflect.TypeFor[A]())}, nil
}

func (d *argDecoder[A]) decode(raw json.RawMessage) (A, error) {
	if a, ok := d.fast(raw); ok {
		return a, nil
	}
	return d.reference(raw)
}

// fast is the plan's path; false means it was not sure and decided nothing.
func (d *argDecoder[A]) fast(raw json.RawMessage) (A, bool) {
	var a A
	if d.plan == nil {
		return a, false
	}
	if !d.plan.Decode(raw, unsafe.Pointer(&a)) {
		var zero A
		return zero, false
	}
	return a, true
}

// reference validates and normalizes with argcheck, writes canonical JSON,
// and decodes it with encoding/json.
func (d *argDecoder[A]) reference(raw json.RawMessage) (A, error) {
	var a A
	m, err := d.check.Check(raw)
	if err != nil {
		return a, toolbind.ArgumentError(d.tool, err)
	}
	norm, err := canonjson.Marshal(m)
	if err != nil {
		return a, &toolreg.ToolArgumentError{Tool: d.tool, Problems: []toolreg.ArgProblem{{Want: "arguments that encode as JSON", Got: err.Error()}}}
	}
	if err := json.Unmarshal(norm, &a); err != nil {
		var zero A
		return zero, &toolreg.ToolArgumentError{Tool: d.tool, Problems: []toolreg.ArgProblem{unmarshalProblem(err)}}
	}
	return a, nil
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
