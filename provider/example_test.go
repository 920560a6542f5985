package provider_test

import (
	"encoding/json"
	"fmt"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/provider"
	"github.com/beam-agents/toolreg/registry"
)

func exampleSpec() *toolreg.Spec {
	minLen := 3
	return &toolreg.Spec{
		Name:        "lookup_customer",
		Description: "Look up a customer by id.",
		Params: []*toolreg.Param{
			{Name: "customer_id", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "The customer's id.", MinLength: &minLen}},
			{Name: "limit", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Description: "At most this many.", Default: json.Number("10"), HasDefault: true}},
		},
		Pos: toolreg.Pos{File: "manifests/lookup_customer.yaml", Line: 1, Col: 1},
	}
}

// OpenAI strict mode: every param required, the optional one nullable, and
// what strict mode cannot enforce moved into the description and reported.
func ExampleRender_openAIStrict() {
	r, err := provider.Render(provider.OpenAIStrict, exampleSpec())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(r.JSON))
	for _, n := range r.Notes {
		fmt.Println(n.Path, n.Action, n.Keyword)
	}
	// Output:
	// {"type":"function","function":{"name":"lookup_customer","description":"Look up a customer by id.","parameters":{"type":"object","properties":{"customer_id":{"type":"string","description":"The customer's id. (minLength: 3)"},"limit":{"type":["integer","null"],"description":"At most this many. (null means not given; default: 10)"}},"required":["customer_id","limit"],"additionalProperties":false},"strict":true}}
	// params.customer_id moved into the description minLength
	// params.limit rewritten required
	// params.limit moved into the description default
}

func ExampleRender_mcp() {
	s := exampleSpec()
	s.Annotations = &toolreg.Annotations{Title: "Look up customer", OpenWorldHint: new(false)}
	r, err := provider.Render(provider.MCP, s)
	if err != nil {
		fmt.Println(err)
		return
	}
	var tool struct {
		Name        string
		Title       string
		Annotations map[string]any
	}
	if err := json.Unmarshal(r.JSON, &tool); err != nil {
		fmt.Println(err)
	}
	fmt.Println(tool.Name, tool.Title, tool.Annotations)
	// Output:
	// lookup_customer Look up customer map[idempotentHint:true openWorldHint:false readOnlyHint:true title:Look up customer]
}

// What "toolreg vet --provider gemini" reports: one finding a line, with
// where, how bad, and what to do.
func ExampleVet() {
	s := exampleSpec()
	s.Params[1].Description = ""
	fs, err := provider.Vet(provider.Gemini, []*toolreg.Spec{s})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range fs {
		fmt.Println(f)
	}
	// Output:
	// manifests/lookup_customer.yaml:1:1: warning: gemini: lookup_customer: params.limit: param has no description: the model guesses what to send; describe it
	// manifests/lookup_customer.yaml:1:1: info: gemini: lookup_customer: params: types, required members and closed objects kept but not enforced: gemini holds arguments to the schema only in function calling mode VALIDATED; toolreg checks every call
	// manifests/lookup_customer.yaml:1:1: info: gemini: lookup_customer: params: additionalProperties: false dropped: the provider does not close the object (toolreg still refuses unknown members)
	// manifests/lookup_customer.yaml:1:1: info: gemini: lookup_customer: params.customer_id: minLength: 3 kept but not enforced: gemini holds arguments to the schema only in function calling mode VALIDATED; toolreg checks every call
	// manifests/lookup_customer.yaml:1:1: info: gemini: lookup_customer: params.limit: default: 10 kept, but gemini ignores it (its Schema takes default for documentation only); toolreg applies the default itself
}

// A registry renders each provider's tools list once; later calls are served
// from its cache.
func Example_registry() {
	r := registry.New()
	if err := r.Register(toolreg.NewTool(exampleSpec())); err != nil {
		fmt.Println(err)
		return
	}
	tools, err := r.ProviderSchema(provider.Anthropic)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(tools[0]))
	// Output:
	// {"name":"lookup_customer","description":"Look up a customer by id.","input_schema":{"type":"object","properties":{"customer_id":{"type":"string","description":"The customer's id.","minLength":3},"limit":{"type":"integer","description":"At most this many.","default":10}},"required":["customer_id"],"additionalProperties":false}}
}
