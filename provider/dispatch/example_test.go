package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/provider/dispatch"
	"github.com/beam-agents/toolreg/runner"
)

func ExampleOpenAIChat() {
	specs := []*toolreg.Spec{
		{Name: "lookup_order", Description: "Look up an order.", Pos: toolreg.Pos{File: "lookup_order.yaml", Line: 1},
			Params: []*toolreg.Param{{Name: "order_id", Schema: toolreg.Schema{Type: toolreg.TypeString}}}},
		{Name: "refund_order", Description: "Refund an order.", SideEffect: true, Pos: toolreg.Pos{File: "refund_order.yaml", Line: 1},
			Params: []*toolreg.Param{{Name: "order_id", Schema: toolreg.Schema{Type: toolreg.TypeString}}}},
	}
	type args struct {
		OrderID string `json:"order_id"`
	}
	b := bindings.New(specs)
	bindings.ReadOnly(b, "lookup_order", func(_ context.Context, a args) (string, error) { return a.OrderID + ": paid", nil })
	bindings.Effect(b, "refund_order", func(_ context.Context, a args) (string, error) { return "refunded", nil })
	bound, err := b.Bind()
	if err != nil {
		panic(err)
	}

	// The assistant message of a Chat Completions response, as openai-go
	// decodes it.
	var msg openai.ChatCompletionMessage
	if err := json.Unmarshal([]byte(`{"role":"assistant","content":null,"tool_calls":[
		{"id":"call_1","type":"function","function":{"name":"lookup_order","arguments":"{\"order_id\":\"o-1\"}"}},
		{"id":"call_2","type":"function","function":{"name":"refund_order","arguments":"{\"order_id\":\"o-1\"}"}},
		{"id":"call_3","type":"function","function":{"name":"refund_ordr","arguments":"{}"}}]}`), &msg); err != nil {
		panic(err)
	}

	event := time.UnixMilli(1764750000000)
	act := runner.NewActivation(bound.Pipeline, []byte("ticket-42"), 7, runner.WithClock(func() time.Time { return event }))
	turn, err := dispatch.OpenAIChat(context.Background(), act, msg)
	if err != nil {
		panic(err)
	}
	for i, o := range turn.Outcomes {
		m, _ := json.Marshal(turn.Messages[i])
		fmt.Printf("%s %s: %s\n", o.Call.ID, o.Status, m)
	}
	// Output:
	// call_1 ran: {"content":"\"o-1: paid\"","tool_call_id":"call_1","role":"tool"}
	// call_2 staged: {"content":"The call to refund_order was staged as intent 3a314fe4-79d0-5a2a-b29b-526df71dbad0: it runs once, after this step of the conversation is committed, and its result comes in a later turn. Do not call it again for the same request.","tool_call_id":"call_2","role":"tool"}
	// call_3 refused: {"content":"The call was not run: there is no tool named \"refund_ordr\". Did you mean \"refund_order\"? Call one of the tools you were given.","tool_call_id":"call_3","role":"tool"}
}
