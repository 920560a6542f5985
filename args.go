package toolreg

import (
	"encoding/json"
	"errors"
	"sync"

	"github.com/beam-agents/toolreg/canonjson"
	"github.com/beam-agents/toolreg/internal/argcheck"
)

// argChecker holds the tool's compiled argument validator, compiled on first
// use and then shared by every call.
type argChecker struct {
	once    sync.Once
	checker *argcheck.Checker
	err     error
}

func (t *Tool) argChecker() (*argcheck.Checker, error) {
	t.args.once.Do(func() {
		t.args.checker, t.args.err = argcheck.Compile(t.spec.ParametersSchema(), t.spec.Strict)
		if t.args.err != nil {
			t.args.err = &ToolDefinitionError{Problems: []Problem{{
				Pos: t.spec.Pos, Tool: t.spec.Name, Path: "params",
				Message: t.args.err.Error() + ": fix the manifest's params",
			}}}
		}
	})
	return t.args.checker, t.args.err
}

// CheckArgs validates args against the tool's contract, the way the runner
// does before a call, and returns them normalized as canonical JSON (coerced,
// defaults applied, nulls for optional params dropped). It needs no bound
// function, so it serves tables that hold a contract only, such as Act's.
// Bad arguments give a *ToolArgumentError listing every failing path.
//
// The rules (see package internal/argcheck and the README's "Argument
// coercion"): values are coerced as Pydantic v2's lax mode does ("10" and 10.0
// for an integer, "2.5" for a number, "yes" or 1 for a boolean) unless the
// manifest sets strict; a null for a param that is not required means absent;
// empty args or a bare null mean {}. Bounds (minimum, multipleOf, ...) are
// checked exactly as the manifest writes them. An integer param takes 64-bit
// integers only (-9223372036854775808 to 9223372036854775807), so that every
// call CheckArgs accepts, and Act stages, a function bound to an int64 field
// and the effector can decode; the binder asks bounds of narrower fields.
func (t *Tool) CheckArgs(args json.RawMessage) (json.RawMessage, error) {
	c, err := t.argChecker()
	if err != nil {
		return nil, err
	}
	if out, ok := c.Canonical(args); ok {
		return out, nil // one pass, for calls the checker's plan is sure of
	}
	return checkArgsReference(t.spec.Name, c, args)
}

// checkArgsReference is CheckArgs' reference path: validate and normalize
// with argcheck, then write canonical JSON. It decides every call the
// one-pass plan leaves, and explains the bad ones.
func checkArgsReference(tool string, c *argcheck.Checker, args json.RawMessage) (json.RawMessage, error) {
	m, err := c.Check(args)
	if err != nil {
		return nil, argumentErrorFrom(tool, err)
	}
	return canonjson.Marshal(m)
}

// argumentErrorFrom turns an error of package internal/argcheck into a
// *ToolArgumentError of the named tool; any other error is returned as is.
// Package bindings reaches it through internal/toolbind, so that every path
// reports bad arguments alike.
func argumentErrorFrom(tool string, err error) error {
	var ae *argcheck.Error
	if !errors.As(err, &ae) {
		return err
	}
	ps := make([]ArgProblem, len(ae.Problems))
	for i, p := range ae.Problems {
		ps[i] = ArgProblem{Path: p.Path, Want: p.Want, Got: p.Got}
	}
	return &ToolArgumentError{Tool: tool, Problems: ps}
}
