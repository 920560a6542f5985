package effector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/beam-agents/toolreg/intent"
)

// TxCompleter is implemented by a DedupStore that keeps its records in a
// database a tool can also write its effect to (effector/pgstore). Before a
// tool function runs, the effector calls WithEffectTx with the claim, and
// runs the function under the context it returns. A function that asks that
// context for the store's transaction (pgstore.TxFrom) opens it, writes its
// effect in it, and the effector records the result through the EffectTx in
// the same transaction: effect and result commit together or not at all. A
// function that never asks keeps today's path (Complete after it returns).
type TxCompleter interface {
	WithEffectTx(ctx context.Context, intentID, token string) (context.Context, EffectTx)
}

// EffectTx is the transaction of one execution, opened only if the function
// asked for it.
type EffectTx interface {
	// Started says the function opened the transaction.
	Started() bool
	// Commit writes result as the intent's terminal record, kept for ttl, in
	// the transaction, if token still owns the claim (fenced by the store's
	// own clock), and commits. If the token no longer owns it, it rolls back,
	// so the effect is not applied, and returns ErrNotOwner. Any other error
	// also means nothing was applied, unless the commit itself was in doubt.
	Commit(ctx context.Context, result []byte, ttl time.Duration) error
	// Rollback discards the transaction; after Commit it does nothing.
	Rollback(ctx context.Context)
}

// recordInTx records res for an execution whose function opened the store's
// transaction: an OK result commits with the effect; any other result rolls
// the effect back and is recorded on the ordinary path, so an ERROR is
// recorded but its write is not applied.
func (e *Effector) recordInTx(ctx context.Context, in *intent.Intent, etx EffectTx, cl claim, res intent.Result) (intent.Result, error) {
	if res.Status != intent.StatusOK {
		etx.Rollback(ctx)
		return e.record(ctx, in, cl, res)
	}
	buf := wireBufs.Get().(*[]byte)
	defer putWireBuf(buf)
	b, err := res.AppendBinary((*buf)[:0])
	*buf = b
	if err != nil {
		etx.Rollback(ctx)
		return intent.Result{}, fmt.Errorf("effector: intent %q: encoding its %s result: %w", in.ID, res.Status, err)
	}
	sctx, cancel := e.storeContext(ctx)
	err = etx.Commit(sctx, b, e.recordTTL(ctx, in, cl)) // approval.go
	cancel()
	if errors.Is(err, ErrNotOwner) {
		// The lease ended first: the effect was rolled back with the result,
		// so this run counts for nothing; the owner that holds the intent
		// now, or the next delivery, runs it.
		e.cfg.logger.WarnContext(ctx, "effector: the claim's lease ended before the effect's transaction committed; the effect was rolled back: raise WithLease above the tool's run time", "intent_id", in.ID, "tool", in.ToolName)
		return intent.Result{}, fmt.Errorf("effector: intent %q: its lease ended before its transaction committed, so its effect was rolled back with its result: redeliver it", in.ID)
	}
	if err != nil {
		// Not committed, or in doubt: the effect and the result commit
		// together, so the next owner finds both or neither.
		return intent.Result{}, e.unrecorded(ctx, in, res, 1, err)
	}
	return res, nil
}
