package toolsearch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/provider"
	"github.com/beam-agents/toolreg/runner"
	"github.com/beam-agents/toolreg/toolsearch"
)

// A turn offers the model search_tools alone; it searches, is shown the
// schema of what it found in its provider's form, and calls it.
func ExampleBind() {
	specs, err := loader.Load("testdata/tools.yaml")
	if err != nil {
		panic(err)
	}
	b := bindings.New(append(specs, toolsearch.Spec()), bindings.PipelineOnly())
	bindings.ReadOnly(b, "track_shipment", func(_ context.Context, a trackArgs) (string, error) { return "in transit", nil })
	bindings.ReadOnly(b, "lookup_order", func(_ context.Context, a orderArgs) (string, error) { return "shipped", nil })
	bindings.ReadOnly(b, "get_weather", func(_ context.Context, a weatherArgs) (string, error) { return "rain", nil })
	if err := toolsearch.Bind(b, provider.OpenAI); err != nil {
		panic(err)
	}
	bound, err := b.Bind()
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	act := runner.NewActivation(bound.Pipeline, []byte("ticket-42"), 1,
		runner.WithClock(time.Now), runner.WithOffered(toolsearch.Name))

	_, err = act.RunTool(ctx, "track_shipment", json.RawMessage(`{"tracking_number":"1Z999"}`))
	fmt.Println(err.(interface{ ModelMessage() string }).ModelMessage())

	found, _ := act.RunTool(ctx, toolsearch.Name, json.RawMessage(`{"query":"where is my package","limit":1}`))
	out, _ := json.Marshal(found)
	fmt.Println(string(out))

	res, err := act.RunTool(ctx, "track_shipment", json.RawMessage(`{"tracking_number":"1Z999"}`))
	fmt.Println(res, err)
	// Output:
	// Tool "track_shipment" is not available in this turn. Call one of the tools you were given, or call search_tools to find a tool for the task and its schema.
	// {"tools":[{"type":"function","function":{"name":"track_shipment","description":"Track a parcel by its carrier tracking number and return where it is.","parameters":{"type":"object","properties":{"tracking_number":{"type":"string","description":"The carrier's tracking number."}},"required":["tracking_number"],"additionalProperties":false}}}]}
	// in transit <nil>
}
