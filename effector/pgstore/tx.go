package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/beam-agents/toolreg/effector"
)

// TxFrom returns the transaction that will record the result of the intent
// being executed, when ctx is (derived from) the context the effector passes
// to a tool function and the effector's store is a *Store; the first call
// opens it. A tool whose effect is a write to the same database makes that
// write in this transaction: the effector writes the result row in it,
// fenced by the claim's token, and commits, so the effect and the recorded
// result commit together or not at all. If the claim was lost (its lease
// lapsed and another owner took it), the commit fails and the write is
// rolled back. If the function returns an error, or its result is refused
// (timeout, contract), the write is rolled back and the ERROR result is
// recorded outside it. The function must not commit or roll back tx itself.
// A function that never calls TxFrom keeps the ordinary path: its effect is
// its own, and the result is recorded after it returns.
//
// Outside such an execution TxFrom returns ErrNoTx; if opening the
// transaction fails it returns that error. Either way the function must not
// fall back to writing its effect elsewhere: return the error, and the
// intent is recorded as failed, with nothing written.
//
// See effector.IntentFrom for the intent's identity in the same context.
func TxFrom(ctx context.Context) (pgx.Tx, error) {
	et, ok := ctx.Value(effectTxKey{}).(*effectTx)
	if !ok {
		return nil, ErrNoTx
	}
	return et.begin(ctx)
}

// ErrNoTx is TxFrom's error for a context that is not an effector's
// execution on a *Store.
var ErrNoTx = errors.New("pgstore: no effect transaction: the context is not an effector execution on a pgstore.Store (TxFrom needs the ctx the tool function was given)")

type effectTxKey struct{}

// effectTx is one execution's transaction, opened by the first TxFrom.
type effectTx struct {
	s        *Store
	intentID string
	token    string

	mu   sync.Mutex
	tx   pgx.Tx
	err  error
	done bool // committed or rolled back: TxFrom opens nothing more
}

// WithEffectTx makes effector.TxCompleter: the transaction is opened only
// when the function asks for it with TxFrom.
func (s *Store) WithEffectTx(ctx context.Context, intentID, token string) (context.Context, effector.EffectTx) {
	et := &effectTx{s: s, intentID: intentID, token: token}
	return context.WithValue(ctx, effectTxKey{}, et), et
}

var _ effector.TxCompleter = (*Store)(nil)

func (et *effectTx) begin(ctx context.Context) (pgx.Tx, error) {
	et.mu.Lock()
	defer et.mu.Unlock()
	if et.tx != nil || et.err != nil {
		return et.tx, et.err
	}
	if et.done {
		return nil, fmt.Errorf("pgstore: intent %q: its execution is over", et.intentID)
	}
	et.tx, et.err = et.s.pool.Begin(context.WithoutCancel(ctx))
	if et.err != nil {
		et.err = fmt.Errorf("pgstore: intent %q: opening the effect's transaction: %w", et.intentID, et.err)
	}
	return et.tx, et.err
}

func (et *effectTx) Started() bool {
	et.mu.Lock()
	defer et.mu.Unlock()
	return et.tx != nil
}

func (et *effectTx) Commit(ctx context.Context, result []byte, ttl time.Duration) error {
	et.mu.Lock()
	defer et.mu.Unlock()
	if et.done || et.tx == nil {
		return fmt.Errorf("pgstore: intent %q: no open transaction to commit", et.intentID)
	}
	et.done = true
	if err := checkDuration("result ttl", ttl); err != nil {
		_ = et.tx.Rollback(ctx)
		return err
	}
	if result == nil {
		result = []byte{}
	}
	if !validToken(et.token) {
		_ = et.tx.Rollback(ctx)
		return fmt.Errorf("pgstore: completing intent %q: %w", et.intentID, effector.ErrNotOwner)
	}
	// The UPDATE locks the row until the commit: a claim that would take
	// over the lapsed lease waits for it and then finds the intent done.
	if err := expectOne(et.tx.Exec(ctx, completeSQL, []byte(et.intentID), et.token, result, micros(ttl))); err != nil {
		_ = et.tx.Rollback(ctx)
		return fmt.Errorf("pgstore: completing intent %q in the effect's transaction: %w", et.intentID, err)
	}
	if err := et.tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgstore: committing intent %q with its effect: %w", et.intentID, err)
	}
	return nil
}

func (et *effectTx) Rollback(ctx context.Context) {
	et.mu.Lock()
	defer et.mu.Unlock()
	if et.done {
		return
	}
	et.done = true
	if et.tx != nil {
		_ = et.tx.Rollback(context.WithoutCancel(ctx))
	}
}
