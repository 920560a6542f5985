package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/runner"
)

type lookupArgs struct {
	CustomerID string `json:"customer_id"`
}

type customer struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type searchArgs struct {
	CustomerID string  `json:"customer_id"`
	Status     *string `json:"status"`
	Limit      int     `json:"limit"`
}

type searchResult struct {
	CustomerID string   `json:"customer_id"`
	Status     *string  `json:"status"` // nil when the call left it out
	Limit      int      `json:"limit"`
	Orders     []string `json:"orders"`
}

type refundArgs struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
	Note    *string `json:"note"`
}

type emailArgs struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// agent is the tools of testdata/manifests bound to functions that record
// each invocation: read-only ones in invoked, effects, which only the
// effector may run, in effects.
type agent struct {
	t     testing.TB
	bound *bindings.Bound

	mu      sync.Mutex
	invoked []string // "tool args" of every read-only function invoked, in no order
	effects []string // "tool args" of every effect function invoked, in order
}

func newAgent(t testing.TB) *agent {
	t.Helper()
	specs, err := loader.Load("testdata/manifests")
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{t: t}
	b := bindings.New(specs)
	bindings.ReadOnly(b, "lookup_customer", func(_ context.Context, in lookupArgs) (customer, error) {
		a.record("lookup_customer", in)
		if in.CustomerID != "cus_ada" {
			return customer{}, errors.New("no customer " + in.CustomerID)
		}
		return customer{ID: in.CustomerID, Name: "Ada Lovelace"}, nil
	})
	bindings.ReadOnly(b, "search_orders", func(_ context.Context, in searchArgs) (searchResult, error) {
		a.record("search_orders", in)
		return searchResult{CustomerID: in.CustomerID, Status: in.Status, Limit: in.Limit, Orders: []string{"ord_1"}}, nil
	})
	bindings.ReadOnly(b, "explode", func(_ context.Context, in struct{}) (string, error) {
		a.record("explode", in)
		panic("the lookup service is down: secret=hunter2")
	})
	bindings.Effect(b, "refund_order", func(_ context.Context, in refundArgs) (map[string]string, error) {
		a.recordEffect("refund_order", in)
		return map[string]string{"refund_id": "re_" + in.OrderID, "status": "succeeded"}, nil
	})
	bindings.Effect(b, "send_email", func(_ context.Context, in emailArgs) (map[string]string, error) {
		a.recordEffect("send_email", in)
		if strings.HasSuffix(in.To, ".invalid") {
			return nil, errors.New("mail relay: 550 no such mailbox " + in.To)
		}
		return map[string]string{"message_id": "msg_1"}, nil
	})
	if a.bound, err = b.Bind(); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a *agent) record(tool string, args any) {
	b, err := json.Marshal(args)
	if err != nil {
		a.t.Error(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.invoked = append(a.invoked, tool+" "+string(b))
}

func (a *agent) recordEffect(tool string, args any) {
	b, err := json.Marshal(args)
	if err != nil {
		a.t.Error(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.effects = append(a.effects, tool+" "+string(b))
}

// ranEffects returns the recorded effect invocations, in order.
func (a *agent) ranEffects() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.effects)
}

// calls returns the recorded invocations, sorted: read-only calls run
// concurrently, so their order is not theirs to keep.
func (a *agent) calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(slices.Values(a.invoked))
}

var eventTime = time.UnixMilli(1764750000000).UTC()

// activation returns a fresh activation of ticket-4711/1, dated eventTime.
func (a *agent) activation(opts ...runner.ActivationOption) *runner.Activation {
	return runner.NewActivation(a.bound.Pipeline, []byte("ticket-4711"), 1,
		append([]runner.ActivationOption{runner.WithClock(func() time.Time { return eventTime })}, opts...)...)
}
