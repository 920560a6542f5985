package effector

import (
	"context"
	"fmt"

	"github.com/beam-agents/toolreg/intent"
)

// DefaultMaxAttempts is how many attempts at an intent WithMaxAttempts
// allows by default.
const DefaultMaxAttempts = 5

// NonDeterministicError is Process's error for an intent whose id is known
// (done, or in flight, or claimed by an owner that may have run it) for
// another call: a replayed activation asked, at the same step, for another
// tool or other arguments. Nothing ran, and the recorded result, which
// answers the other call, is withheld: Process returns a REJECTED result
// with it, which Serve publishes and acknowledges.
type NonDeterministicError struct {
	IntentID string
	Step     uint32
	Recorded Call // what the id was first claimed for
	Asked    Call // what this intent asks for
}

func (e *NonDeterministicError) Error() string {
	return fmt.Sprintf("effector: intent %q (step %d): non-deterministic replay: the id was recorded for %s, and this intent asks for %s; nothing ran, and the recorded result, which answers the other call, is not returned: a replayed activation must make the same calls in the same order, so replay the model's recorded answers, or stage a different call in a new activation (another seq)",
		e.IntentID, e.Step, e.Recorded, e.Asked)
}

// PoisonError is the reason an intent is handed to the dead-letter sink when
// it has been attempted more times than WithMaxAttempts allows. Its result
// is ERROR: earlier attempts may have run the tool.
type PoisonError struct {
	IntentID string
	Tool     string
	Attempts int // the attempts counted, this one included
	Max      int // WithMaxAttempts
	// StoreErr is the store's error when the store could not be reached
	// for the intent at the last attempt; its ERROR result is then not recorded.
	StoreErr error
}

func (e *PoisonError) Error() string {
	msg := fmt.Sprintf("effector: intent %q (tool %q) given up after %d attempts (WithMaxAttempts is %d): each earlier attempt stopped without a result (a worker crashed mid-tool, or the store failed), so it is not attempted again; its effect is unknown: look downstream for intent id %q, and stage the call again under a new id if it did not happen",
		e.IntentID, e.Tool, e.Attempts, e.Max, e.IntentID)
	if e.StoreErr != nil {
		msg += fmt.Sprintf(" (the store could not record this result: %v)", e.StoreErr)
	}
	return msg
}

func (e *PoisonError) Unwrap() error { return e.StoreErr }

// WithMaxAttempts sets how many attempts at one intent the effector makes
// before it gives the intent up: records a terminal ERROR result without
// running the tool again, and hands the intent to the dead-letter sink (see
// WithDeadLetter) with a *PoisonError. Attempts are counted by the store
// (claims whose owner neither completed nor released them: a crash or a
// stall mid-way) and by the source (a delivery count such as Redis Streams',
// which Serve passes on with WithDeliveryCount); the larger counts. The
// default is DefaultMaxAttempts (5). New refuses n < 1.
func WithMaxAttempts(n int) Option {
	return func(c *config) { c.maxAttempts = n }
}

type deliveryCountKey struct{}

// WithDeliveryCount returns ctx carrying how many times the source has
// delivered the intent Process is given, this time included, for
// WithMaxAttempts. Serve sets it from Delivery.Deliveries; call it when
// calling Process from a source of your own that counts deliveries.
func WithDeliveryCount(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, deliveryCountKey{}, n)
}

func deliveryCount(ctx context.Context) int {
	n, _ := ctx.Value(deliveryCountKey{}).(int)
	return n
}

// mismatch refuses an intent whose id was recorded for another call.
func (e *Effector) mismatch(ctx context.Context, in *intent.Intent, asked, recorded Call) (intent.Result, error) {
	err := &NonDeterministicError{IntentID: in.ID, Step: in.StepIndex, Recorded: recorded, Asked: asked}
	e.cfg.logger.WarnContext(ctx, "effector: non-deterministic replay refused", "intent_id", in.ID, "step", in.StepIndex, "recorded", recorded.String(), "asked", asked.String())
	return e.rejected(in, err.Error()), err
}

// giveUp completes a poison intent's claim with ERROR, without running it,
// once the dead-letter sink has it.
func (e *Effector) giveUp(ctx context.Context, in *intent.Intent, cl claim, attempts int) (intent.Result, error) {
	reason := &PoisonError{IntentID: in.ID, Tool: in.ToolName, Attempts: attempts, Max: e.cfg.maxAttempts}
	if err := e.deadLetterPoison(ctx, in, reason); err != nil {
		sctx, cancel := e.storeContext(ctx)
		defer cancel()
		if rerr := e.store.Release(sctx, in.ID, cl.token); rerr != nil {
			e.cfg.logger.WarnContext(ctx, "effector: releasing claim", "intent_id", in.ID, "error", rerr.Error())
		}
		return intent.Result{}, err
	}
	return e.record(ctx, in, cl, e.result(in, intent.StatusError, nil, reason.Error()))
}

// giveUpUnclaimed gives a poison intent up when the store cannot be reached
// for it: the source delivered it past the limit. Its ERROR result is not
// recorded, so it is returned for the source to publish and acknowledge.
func (e *Effector) giveUpUnclaimed(ctx context.Context, in *intent.Intent, deliveries int, storeErr error) (intent.Result, error) {
	reason := &PoisonError{IntentID: in.ID, Tool: in.ToolName, Attempts: deliveries, Max: e.cfg.maxAttempts, StoreErr: storeErr}
	if err := e.deadLetterPoison(ctx, in, reason); err != nil {
		return intent.Result{}, err
	}
	return e.result(in, intent.StatusError, nil, reason.Error()), nil
}

func (e *Effector) deadLetterPoison(ctx context.Context, in *intent.Intent, reason *PoisonError) error {
	e.cfg.logger.ErrorContext(ctx, "effector: poison intent given up", "intent_id", in.ID, "tool", in.ToolName, "attempts", reason.Attempts, "max_attempts", reason.Max)
	if e.cfg.deadLetter == nil {
		return nil
	}
	if err := e.cfg.deadLetter(ctx, in, reason); err != nil {
		return fmt.Errorf("effector: intent %q: giving up a poison intent: the dead-letter sink failed: %w", in.ID, err)
	}
	return nil
}
