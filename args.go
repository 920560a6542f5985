package toolreg

import (
	"encoding/json"
	"errors"
)

// argChecker holds the tool's compiled argument validator.
// TODO(issue 3): compile the parameters schema once (santhosh-tekuri/jsonschema/v6)
// with Pydantic-lax coercion, defaults and null-as-absent.
type argChecker struct{}

// CheckArgs validates args against the tool's contract, the way the runner
// does before a call, and returns them normalized as canonical JSON (coerced,
// defaults applied, nulls for optional params dropped). It needs no bound
// function, so it serves tables that hold a contract only, such as Act's.
// Bad arguments give a *ToolArgumentError.
func (t *Tool) CheckArgs(args json.RawMessage) (json.RawMessage, error) {
	return nil, errors.New("toolreg: CheckArgs: not implemented yet")
}
