package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/examples/support-agent/tools"
)

// backend stands in for a customer database, a help center, a payment
// provider and a mail relay. Its functions take the argument types toolreg gen
// wrote from the manifests for the support agent (package tools).
type backend struct {
	mu  sync.Mutex
	log *os.File // effects.log, or nil
}

type customer struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Email   string   `json:"email"`
	Plan    string   `json:"plan"`
	Tickets []string `json:"tickets,omitempty"`
}

var customers = map[string]customer{
	"cus_8f3k2p": {ID: "cus_8f3k2p", Name: "Ada Lovelace", Email: "ada@example.test", Plan: "pro"},
}

func (be *backend) lookupCustomer(ctx context.Context, a tools.LookupCustomerArgs) (customer, error) {
	c, ok := customers[a.CustomerID]
	if !ok {
		return customer{}, fmt.Errorf("no customer %s", a.CustomerID)
	}
	if a.IncludeHistory {
		c.Tickets = []string{"T-1001 duplicate charge"}
	}
	return c, nil
}

type order struct {
	ID       string  `json:"id"`
	Customer string  `json:"customer_id"`
	Status   string  `json:"status"`
	Total    float64 `json:"total"`
	Currency string  `json:"currency"`
}

// orders are the customer's orders, most recent first.
var orders = []order{
	{ID: "ord_2026_000123", Customer: "cus_8f3k2p", Status: "paid", Total: 49.9, Currency: "EUR"},
	{ID: "ord_2026_000098", Customer: "cus_8f3k2p", Status: "delivered", Total: 12.5, Currency: "EUR"},
	{ID: "ord_2025_000871", Customer: "cus_8f3k2p", Status: "refunded", Total: 80, Currency: "EUR"},
}

func (be *backend) lookupOrder(ctx context.Context, a tools.LookupOrderArgs) (order, error) {
	for _, o := range orders {
		if o.ID == a.OrderID {
			return o, nil
		}
	}
	return order{}, fmt.Errorf("no order %s", a.OrderID)
}

type orderList struct {
	Orders []order `json:"orders"`
}

// searchOrders lists the customer's orders, filtered by status when the
// call gives one (an optional param without a default: a nil pointer when
// absent). The list is wrapped in an object: MCP's structured content is one.
func (be *backend) searchOrders(ctx context.Context, a tools.SearchOrdersArgs) (orderList, error) {
	out := orderList{Orders: []order{}}
	for _, o := range orders {
		if o.Customer == a.CustomerID && (a.Status == nil || o.Status == string(*a.Status)) && int64(len(out.Orders)) < a.Limit {
			out.Orders = append(out.Orders, o)
		}
	}
	return out, nil
}

type article struct {
	Title string `json:"title"`
	URL   string `json:"url"`
}

func (be *backend) searchKB(ctx context.Context, a tools.SearchKBArgs) (map[string]any, error) {
	var hits []article
	for _, art := range []article{
		{"Refunds for duplicate charges", "https://help.example.test/refunds/duplicate"},
		{"How long does a refund take?", "https://help.example.test/refunds/timing"},
		{"Changing your plan", "https://help.example.test/billing/plans"},
	} {
		if strings.Contains(strings.ToLower(art.Title), strings.ToLower(a.Query)) && int64(len(hits)) < a.TopK {
			hits = append(hits, art)
		}
	}
	return map[string]any{"locale": a.Locale, "articles": hits}, nil
}

func (be *backend) refundOrder(ctx context.Context, a tools.RefundOrderArgs) (map[string]any, error) {
	in, ok := effector.IntentFrom(ctx)
	if !ok {
		return nil, errors.New("refund_order runs only in the effector")
	}
	r := map[string]any{"refund_id": "re_" + in.ID[:8], "order_id": a.OrderID, "amount": a.Amount, "reason": a.Reason}
	return r, be.record("refund_order", in.ID, r)
}

func (be *backend) sendEmail(ctx context.Context, a tools.SendEmailArgs) (map[string]any, error) {
	in, ok := effector.IntentFrom(ctx)
	if !ok {
		return nil, errors.New("send_email runs only in the effector")
	}
	m := map[string]any{"message_id": "msg_" + in.ID[:8], "to": a.To, "subject": a.Subject}
	return m, be.record("send_email", in.ID, m)
}

// record appends one executed effect to the effects log, keyed by its
// intent id as a real provider's idempotency key would be.
func (be *backend) record(tool, intentID string, result map[string]any) error {
	if be.log == nil {
		return nil
	}
	line, err := json.Marshal(map[string]any{"tool": tool, "intent_id": intentID, "result": result})
	if err != nil {
		return err
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	_, err = be.log.Write(append(line, '\n'))
	return err
}
