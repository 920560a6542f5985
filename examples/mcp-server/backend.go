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

// Its functions return the result types toolreg gen wrote from the
// manifests' returns: the binder checks them against the manifests, the
// server lists them as each tool's outputSchema, and every result is checked
// against them before a client sees it.

var customers = map[string]tools.LookupCustomerResult{
	"cus_8f3k2p": {ID: "cus_8f3k2p", Name: "Ada Lovelace", Email: "ada@example.test", Plan: tools.LookupCustomerResultPlanPro},
}

func (be *backend) lookupCustomer(ctx context.Context, a tools.LookupCustomerArgs) (tools.LookupCustomerResult, error) {
	c, ok := customers[a.CustomerID]
	if !ok {
		return tools.LookupCustomerResult{}, fmt.Errorf("no customer %s", a.CustomerID)
	}
	if a.IncludeHistory {
		c.Tickets = []string{"T-1001 duplicate charge"}
	}
	return c, nil
}

type order = tools.SearchOrdersResultOrdersItem

func eur() *string { s := "EUR"; return &s }

// orders are the customer's orders, most recent first.
var orders = []order{
	{ID: "ord_2026_000123", CustomerID: "cus_8f3k2p", Status: "paid", Total: 49.9, Currency: eur()},
	{ID: "ord_2026_000098", CustomerID: "cus_8f3k2p", Status: "delivered", Total: 12.5, Currency: eur()},
	{ID: "ord_2025_000871", CustomerID: "cus_8f3k2p", Status: "refunded", Total: 80, Currency: eur()},
}

func (be *backend) lookupOrder(ctx context.Context, a tools.LookupOrderArgs) (tools.LookupOrderResult, error) {
	for _, o := range orders {
		if o.ID == a.OrderID {
			return tools.LookupOrderResult{ID: o.ID, CustomerID: o.CustomerID, Status: tools.LookupOrderResultStatus(o.Status),
				Total: o.Total, Currency: o.Currency, Charges: o.Charges}, nil
		}
	}
	return tools.LookupOrderResult{}, fmt.Errorf("no order %s", a.OrderID)
}

// searchOrders lists the customer's orders, filtered by status when the
// call gives one (an optional param without a default: a nil pointer when
// absent). The list is wrapped in an object: MCP's structured content is one.
func (be *backend) searchOrders(ctx context.Context, a tools.SearchOrdersArgs) (tools.SearchOrdersResult, error) {
	out := tools.SearchOrdersResult{Orders: []order{}}
	for _, o := range orders {
		if o.CustomerID == a.CustomerID && (a.Status == nil || string(o.Status) == string(*a.Status)) && int64(len(out.Orders)) < a.Limit {
			out.Orders = append(out.Orders, o)
		}
	}
	return out, nil
}

type article = tools.SearchKBResultArticlesItem

func (be *backend) searchKB(ctx context.Context, a tools.SearchKBArgs) (tools.SearchKBResult, error) {
	out := tools.SearchKBResult{Articles: []article{}, Locale: &a.Locale}
	for _, art := range []article{
		{Title: "Refunds for duplicate charges", URL: "https://help.example.test/refunds/duplicate"},
		{Title: "How long does a refund take?", URL: "https://help.example.test/refunds/timing"},
		{Title: "Changing your plan", URL: "https://help.example.test/billing/plans"},
	} {
		if strings.Contains(strings.ToLower(art.Title), strings.ToLower(a.Query)) && int64(len(out.Articles)) < a.TopK {
			out.Articles = append(out.Articles, art)
		}
	}
	return out, nil
}

func (be *backend) refundOrder(ctx context.Context, a tools.RefundOrderArgs) (tools.RefundOrderResult, error) {
	in, ok := effector.IntentFrom(ctx)
	if !ok {
		return tools.RefundOrderResult{}, errors.New("refund_order runs only in the effector")
	}
	r := tools.RefundOrderResult{RefundID: "re_" + in.ID[:8], OrderID: a.OrderID, Amount: a.Amount, Reason: tools.RefundOrderResultReason(a.Reason)}
	return r, be.record("refund_order", in.ID, r)
}

func (be *backend) refundOverLimit(ctx context.Context, a tools.RefundOverLimitArgs) (tools.RefundOverLimitResult, error) {
	in, ok := effector.IntentFrom(ctx)
	if !ok {
		return tools.RefundOverLimitResult{}, errors.New("refund_over_limit runs only in the effector")
	}
	r := tools.RefundOverLimitResult{RefundID: "re_" + in.ID[:8], OrderID: a.OrderID, Amount: a.Amount}
	return r, be.record("refund_over_limit", in.ID, r)
}

func (be *backend) sendEmail(ctx context.Context, a tools.SendEmailArgs) (tools.SendEmailResult, error) {
	in, ok := effector.IntentFrom(ctx)
	if !ok {
		return tools.SendEmailResult{}, errors.New("send_email runs only in the effector")
	}
	m := tools.SendEmailResult{MessageID: "msg_" + in.ID[:8], To: a.To, Subject: a.Subject}
	return m, be.record("send_email", in.ID, m)
}

// record appends one executed effect to the effects log, keyed by its
// intent id as a real provider's idempotency key would be.
func (be *backend) record(tool, intentID string, result any) error {
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
