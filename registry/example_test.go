package registry_test

import (
	"fmt"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/registry"
)

func Example() {
	// In a service the Specs come from loader.Load("manifests"); here one is
	// built in Go.
	spec := &toolreg.Spec{
		Name:        "lookup_customer",
		Description: "Look up a customer by id.",
		Params: []*toolreg.Param{
			{Name: "customer_id", Schema: toolreg.Schema{Type: toolreg.TypeString}},
			{Name: "limit", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Default: 10, HasDefault: true}},
		},
	}

	r := registry.New()
	if err := r.Register(toolreg.NewTool(spec)); err != nil {
		fmt.Println(err)
	}
	// A second tool under the same name is refused.
	fmt.Println(r.Register(toolreg.NewTool(spec)))

	t, err := r.Get("lookup_customer")
	fmt.Println(t.Name(), t.SideEffect(), err)

	// A typo names the tool asked for and the registered one it is close to.
	_, err = r.Get("lookup_custmer")
	fmt.Println(err)

	// The tools list to send a model provider.
	for _, s := range r.ToolsSchema() {
		fmt.Println(string(s))
	}
	// Output:
	// toolreg: tool "lookup_customer" is already registered: tool names must be unique
	// lookup_customer false <nil>
	// toolreg: no tool named "lookup_custmer" (did you mean "lookup_customer"?)
	// {"name":"lookup_customer","description":"Look up a customer by id.","parameters":{"type":"object","properties":{"customer_id":{"type":"string"},"limit":{"type":"integer","default":10}},"required":["customer_id"],"additionalProperties":false}}
}
