package effector_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
)

func ExampleEffector_Process() {
	// The refund tool's contract, as a manifest would declare it.
	specs := []*toolreg.Spec{{
		Name:        "refund",
		Description: "Refund an order.",
		SideEffect:  true,
		Params: []*toolreg.Param{
			{Name: "order_id", Schema: toolreg.Schema{Type: toolreg.TypeString}},
			{Name: "amount", Schema: toolreg.Schema{Type: toolreg.TypeInteger}},
		},
	}}
	type refundArgs struct {
		OrderID string `json:"order_id"`
		Amount  int    `json:"amount"`
	}
	b := bindings.New(specs, bindings.EffectorOnly())
	bindings.Effect(b, "refund", func(ctx context.Context, a refundArgs) (map[string]any, error) {
		intent, _ := effector.IntentFrom(ctx) // its ID is the payment provider's idempotency key
		fmt.Println("refunding", a.OrderID, "with idempotency key", intent.ID)
		return map[string]any{"refunded": a.Amount, "order_id": a.OrderID}, nil
	})
	bound, err := b.Bind()
	if err != nil {
		panic(err)
	}

	now := time.UnixMilli(1700000000000)
	eff, err := effector.New(bound.Effector, effector.NewMemoryStore(),
		effector.WithClock(func() time.Time { return now }),
		effector.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}

	// An intent as Activation.Act stages it.
	key := []byte("customer-42")
	in := &intent.Intent{
		ID: intent.IntentID(key, 7, 0), EntityKey: key, Seq: 7, StepIndex: 0,
		ToolName: "refund", ArgsJSON: []byte(`{"amount":30,"order_id":"o-1"}`),
		CreatedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(time.Hour).UnixMilli(),
		Kind: intent.KindTool,
	}
	for range 2 { // the second delivery is answered from the store
		res, err := eff.Process(context.Background(), in)
		if err != nil {
			panic(err)
		}
		fmt.Println(res.Status, string(res.Payload))
	}
	// Output:
	// refunding o-1 with idempotency key 07f01f57-a2c7-5e08-8654-7b3ab3c78cbc
	// OK {"order_id":"o-1","refunded":30}
	// OK {"order_id":"o-1","refunded":30}
}
