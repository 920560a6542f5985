package toolreg_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/beam-agents/toolreg"
)

// CheckArgs validates a call against the tool's contract without running
// anything: lax values are coerced, a null for an optional param means absent,
// and defaults are applied. A bad call lists every failing path, in a form
// the model can read and correct.
func ExampleTool_CheckArgs() {
	tool := toolreg.NewTool(&toolreg.Spec{
		Name: "search", Description: "Search the catalogue.",
		Params: []*toolreg.Param{
			{Name: "query", Schema: toolreg.Schema{Type: toolreg.TypeString}},
			{Name: "limit", Schema: toolreg.Schema{Type: toolreg.TypeInteger, HasDefault: true, Default: json.Number("10"), Minimum: "1", Maximum: "100"}},
			{Name: "exact", Schema: toolreg.Schema{Type: toolreg.TypeBoolean}, Optional: true},
		},
	})

	args, err := tool.CheckArgs(json.RawMessage(`{"query":"shoes","exact":"yes","limit":null}`))
	fmt.Println(string(args), err)

	_, err = tool.CheckArgs(json.RawMessage(`{"limit":500,"colour":"red"}`))
	var ae *toolreg.ToolArgumentError
	if errors.As(err, &ae) {
		fmt.Println(ae.ModelMessage())
	}
	// Output:
	// {"exact":true,"limit":10,"query":"shoes"} <nil>
	// The call to search was not run: its arguments do not match the tool's parameters.
	// - "colour": expected only known parameters (exact, limit, query), got an unknown parameter
	// - "limit": expected at most 100, got 500
	// - "query": expected string (required), got nothing
	// Fix these and call the tool again.
}
