package effector_test

import (
	"context"
	"errors"
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

// downStore is a dedup store that cannot be reached.
type downStore struct{ effector.DedupStore }

func (downStore) Claim(context.Context, string, effector.Call, time.Duration) (effector.Claim, error) {
	return effector.Claim{}, errors.New("the store is down")
}

// Each thing Process can return, and what the caller does with it: the
// README's Process snippet is this switch (TestREADMEProcessSnippetIsExample
// holds the two to the same lines).
func ExampleEffector_Process_outcomes() {
	specs := []*toolreg.Spec{{
		Name: "refund", Description: "Refund an order.", SideEffect: true,
		Params: []*toolreg.Param{{Name: "order_id", Schema: toolreg.Schema{Type: toolreg.TypeString}}},
	}}
	b := bindings.New(specs, bindings.EffectorOnly())
	bindings.Effect(b, "refund", func(ctx context.Context, a struct {
		OrderID string `json:"order_id"`
	}) (map[string]string, error) {
		return map[string]string{"refunded": a.OrderID}, nil
	})
	bound, err := b.Bind()
	if err != nil {
		panic(err)
	}
	now := time.UnixMilli(1700000000000)
	quiet := []effector.Option{effector.WithClock(func() time.Time { return now }), effector.WithLogger(slog.New(slog.DiscardHandler))}
	eff, err := effector.New(bound.Effector, effector.NewMemoryStore(), quiet...)
	if err != nil {
		panic(err)
	}
	down, err := effector.New(bound.Effector, downStore{effector.NewMemoryStore()}, quiet...)
	if err != nil {
		panic(err)
	}
	staged := func(seq int64, args string, ttl time.Duration) *intent.Intent {
		key := []byte("customer-42")
		return &intent.Intent{ID: intent.IntentID(key, seq, 0), EntityKey: key, Seq: seq, ToolName: "refund", ArgsJSON: []byte(args),
			CreatedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(ttl).UnixMilli(), Kind: intent.KindTool}
	}
	forged := staged(3, `{"order_id":"o-3"}`, time.Hour)
	forged.Seq = 4 // its id is not the one its position derives

	ctx := context.Background()
	for _, d := range []struct {
		eff *effector.Effector
		in  *intent.Intent
	}{
		{eff, staged(1, `{"order_id":"o-1"}`, time.Hour)},
		{eff, staged(1, `{"order_id":"o-2"}`, time.Hour)}, // a replay staged another call at seq 1
		{eff, forged},
		{eff, staged(2, `{"order_id":"o-1"}`, -time.Minute)},
		{down, staged(5, `{"order_id":"o-5"}`, time.Hour)},
	} {
		res, err := d.eff.Process(ctx, d.in)
		var refused *effector.RefusedError
		var replay *effector.NonDeterministicError
		switch {
		case errors.As(err, &replay):
			// A replay staged another call at this intent's position: res is
			// REJECTED, nothing ran, and every redelivery gets the same answer.
			// Publish res, then acknowledge the intent.
			fmt.Println("publish", res.Status, "then acknowledge: a replay asked for another call")
		case errors.As(err, &refused) && refused.SinkErr == nil:
			// Refused (a bad signature, an id its position does not derive)
			// and dead-lettered: acknowledge it, and publish nothing.
			fmt.Println("dead-lettered: acknowledge, publish nothing")
		case err != nil:
			// No result (the store failed, ctx ended, the result could not be
			// recorded, the dead-letter sink failed): never acknowledge the
			// intent; redeliver it later.
			fmt.Println("no result: redeliver later:", err)
		default:
			// Publish res, then acknowledge. OK: it ran (when an earlier
			// attempt was cut off, res.ErrorMessage starts "effect unknown": it
			// may have run twice). ERROR: it ran and failed, or timed out, so its
			// effect is unknown. REJECTED or EXPIRED: nothing ran.
			// res.ErrorMessage says why.
			fmt.Println("publish", res.Status, "then acknowledge")
		}
	}
	// Output:
	// publish OK then acknowledge
	// publish REJECTED then acknowledge: a replay asked for another call
	// dead-lettered: acknowledge, publish nothing
	// publish EXPIRED then acknowledge
	// no result: redeliver later: effector: claiming intent "0c34bc31-f3da-5965-a93d-81345dcece4f": the store is down
}
