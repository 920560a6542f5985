package effector

import (
	"context"

	"github.com/beam-agents/toolreg"
)

// IntentInfo is the identity of the intent a tool function is executing for.
// Pass ID downstream as an idempotency key (a payment provider's
// Idempotency-Key header, a unique column), so that even an execution whose
// outcome was lost cannot repeat the effect.
type IntentInfo struct {
	ID        string // the intent id: a pure function of (EntityKey, Seq, Step)
	EntityKey []byte
	Seq       int64
	Step      uint32
	Attempt   uint32
}

type intentKey struct{}

func withIntent(ctx context.Context, in *toolreg.Intent) context.Context {
	return context.WithValue(ctx, intentKey{}, &IntentInfo{
		ID:        in.ID,
		EntityKey: append([]byte(nil), in.EntityKey...),
		Seq:       in.Seq,
		Step:      in.StepIndex,
		Attempt:   in.Attempt,
	})
}

// IntentFrom returns the identity of the intent being executed, when ctx is
// (derived from) the context the effector passes to a tool function. It comes
// from the intent itself, never from the arguments: an argument called
// "intent" cannot change it.
func IntentFrom(ctx context.Context) (IntentInfo, bool) {
	p, ok := ctx.Value(intentKey{}).(*IntentInfo)
	if !ok {
		return IntentInfo{}, false
	}
	info := *p
	info.EntityKey = append([]byte(nil), p.EntityKey...)
	return info, true
}
