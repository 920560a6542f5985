package a

import (
	"context"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
)

type RefundArgs struct{ OrderID string }
type LookupArgs struct{ ID string }

func refund(ctx context.Context, a RefundArgs) (string, error) { return "ok", nil }
func lookup(ctx context.Context, a LookupArgs) (string, error) { return "x", nil }

type Mailer struct{}

func (m *Mailer) Send(ctx context.Context, a RefundArgs) (string, error) { return "sent", nil }

func Bind(b *bindings.Binder, m *Mailer) {
	bindings.Effect(b, "refund", refund) // the binding itself: not reported
	bindings.Effect(b, "send_email", m.Send)
	bindings.ReadOnly(b, "lookup", lookup) // read-only: may be called anywhere
	bindings.Effect(b, "inline", func(ctx context.Context, a RefundArgs) (string, error) { return "", nil })
}

func Direct(ctx context.Context) {
	refund(ctx, RefundArgs{}) // want `a call of refund, bound as side-effecting tool "refund" at effectcheck/testdata/src/a/a.go:\d+, runs its effect inline`
	lookup(ctx, LookupArgs{})
}

func ThroughVariable(ctx context.Context) {
	f := refund // want `a use of refund, bound as side-effecting tool "refund"`
	f(ctx, RefundArgs{})
}

func MethodValue(ctx context.Context, m *Mailer) {
	m.Send(ctx, RefundArgs{}) // want `a call of Send, bound as side-effecting tool "send_email"`
	g := m.Send               // want `a use of Send`
	_ = g
}

func Bypass(t *toolreg.Tool) any {
	return t.Unwrap() // want `Tool.Unwrap outside package effector bypasses the side-effect guard`
}

// BindRefundLater is a wrapper like the Bind<Tool> helpers toolreg gen writes:
// what its callers pass is bound as an effect.
func BindRefundLater(b *bindings.Binder, fn func(context.Context, RefundArgs) (string, error)) {
	bindings.Effect(b, "refund_later", fn)
}

func refundLater(ctx context.Context, a RefundArgs) (string, error) { return "ok", nil }

func BindThroughWrapper(b *bindings.Binder) {
	BindRefundLater(b, refundLater) // the binding: not reported
}

func CallsWrapped(ctx context.Context) {
	refundLater(ctx, RefundArgs{}) // want `a call of refundLater, bound as side-effecting tool "refund_later"`
}
