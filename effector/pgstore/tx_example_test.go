package pgstore

import (
	"context"
	"errors"
	"fmt"
)

// A refund tool whose effect is a row in the store's own database writes it
// in the transaction that records the intent's result: the refund and the
// result commit together or not at all, and a claim lost to another owner
// rolls the refund back.
func ExampleTxFrom() {
	refund := func(ctx context.Context, a refundArgs) (map[string]any, error) {
		tx, err := TxFrom(ctx)
		if err != nil {
			return nil, err // recorded as ERROR; nothing was written
		}
		if _, err := tx.Exec(ctx, `INSERT INTO refunds (order_id, amount) VALUES ($1, $2)`, a.OrderID, a.Amount); err != nil {
			return nil, err // recorded as ERROR; the insert is rolled back
		}
		return map[string]any{"refunded": a.Amount}, nil // commits with the insert
	}
	_, err := TxFrom(context.Background())
	fmt.Println("outside an execution:", errors.Is(err, ErrNoTx))
	_ = refund // bind it with bindings.Effect and run it with effector.New(table, store)
	// Output: outside an execution: true
}
