package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/examples/support-agent/tools"
)

// backend stands in for the services a real support agent calls: a customer
// database, an order system, a payment provider and a mail relay. The payment
// provider and the mail relay record every call with its idempotency key, the
// intent id, so the trace can show how many times each effect happened.
type backend struct {
	customers map[string]customer
	orders    map[string]order

	mu      sync.Mutex
	refunds []refund // every refund the payment provider applied
	outbox  []email  // every email the relay sent
}

type customer struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Email  string `json:"email"`
	Plan   string `json:"plan"`
	Status string `json:"status"`
}

type order struct {
	ID         string   `json:"id"`
	CustomerID string   `json:"customer_id"`
	Status     string   `json:"status"`
	Total      float64  `json:"total"`
	Charges    []string `json:"charges"`
}

type refund struct {
	ID             string  `json:"refund_id"`
	OrderID        string  `json:"order_id"`
	Amount         float64 `json:"amount"`
	Reason         string  `json:"reason"`
	IdempotencyKey string  `json:"-"`
}

type email struct {
	ID             string `json:"message_id"`
	To             string `json:"to"`
	Subject        string `json:"subject"`
	IdempotencyKey string `json:"-"`
}

func newBackend() *backend {
	return &backend{
		customers: map[string]customer{
			"cus_8f3k2p": {ID: "cus_8f3k2p", Name: "Ada Lovelace", Email: "ada@example.test", Plan: "pro", Status: "active"},
		},
		orders: map[string]order{
			"ord_2026_000123": {ID: "ord_2026_000123", CustomerID: "cus_8f3k2p", Status: "paid", Total: 49.90,
				Charges: []string{"ch_1 49.90 2026-11-28", "ch_2 49.90 2026-11-28 (duplicate)"}},
			"ord_2026_000098": {ID: "ord_2026_000098", CustomerID: "cus_8f3k2p", Status: "delivered", Total: 12.00,
				Charges: []string{"ch_0 12.00 2026-10-02"}},
			"ord_2026_000150": {ID: "ord_2026_000150", CustomerID: "cus_8f3k2p", Status: "delivered", Total: 640.00,
				Charges: []string{"ch_3 640.00 2026-11-20"}},
		},
	}
}

// bind binds every tool of the manifests through the generated helpers.
func (be *backend) bind(b *bindings.Binder) {
	tools.BindLookupCustomer(b, be.lookupCustomer)
	tools.BindLookupOrder(b, be.lookupOrder)
	tools.BindSearchOrders(b, be.searchOrders)
	tools.BindSearchKB(b, be.searchKB)
	tools.BindRefundOrder(b, be.refundOrder)
	tools.BindRefundOverLimit(b, be.refundOverLimit)
	tools.BindSendEmail(b, be.sendEmail)
}

// The tools return the result types toolreg gen wrote from the manifests'
// returns (package tools): the binder checks them against the manifests, and
// the runner and the effector check every result before handing it on.

func (be *backend) lookupCustomer(ctx context.Context, a tools.LookupCustomerArgs) (tools.LookupCustomerResult, error) {
	c, ok := be.customers[a.CustomerID]
	if !ok {
		return tools.LookupCustomerResult{}, fmt.Errorf("no customer %s", a.CustomerID)
	}
	status := tools.LookupCustomerResultStatus(c.Status)
	return tools.LookupCustomerResult{ID: c.ID, Name: c.Name, Email: c.Email,
		Plan: tools.LookupCustomerResultPlan(c.Plan), Status: &status}, nil
}

func (be *backend) lookupOrder(ctx context.Context, a tools.LookupOrderArgs) (tools.LookupOrderResult, error) {
	o, ok := be.orders[a.OrderID]
	if !ok {
		return tools.LookupOrderResult{}, fmt.Errorf("no order %s", a.OrderID)
	}
	return tools.LookupOrderResult{ID: o.ID, CustomerID: o.CustomerID,
		Status: tools.LookupOrderResultStatus(o.Status), Total: o.Total, Charges: o.Charges}, nil
}

func (be *backend) searchOrders(ctx context.Context, a tools.SearchOrdersArgs) (tools.SearchOrdersResult, error) {
	out := tools.SearchOrdersResult{Orders: []tools.SearchOrdersResultOrdersItem{}}
	for _, o := range be.orders {
		if o.CustomerID == a.CustomerID && (a.Status == nil || string(*a.Status) == o.Status) {
			out.Orders = append(out.Orders, tools.SearchOrdersResultOrdersItem{ID: o.ID, CustomerID: o.CustomerID,
				Status: tools.SearchOrdersResultOrdersItemStatus(o.Status), Total: o.Total, Charges: o.Charges})
		}
	}
	sort.Slice(out.Orders, func(i, j int) bool { return out.Orders[i].ID > out.Orders[j].ID })
	if int64(len(out.Orders)) > a.Limit {
		out.Orders = out.Orders[:a.Limit]
	}
	return out, nil
}

type article = tools.SearchKBResultArticlesItem

func (be *backend) searchKB(ctx context.Context, a tools.SearchKBArgs) (tools.SearchKBResult, error) {
	all := []article{
		{Title: "Refunds for duplicate charges", URL: "https://help.example.test/refunds/duplicate"},
		{Title: "How long does a refund take?", URL: "https://help.example.test/refunds/timing"},
		{Title: "Changing your plan", URL: "https://help.example.test/billing/plans"},
	}
	// The manifest's minLength lets a query of blanks through: it matches nothing.
	out := tools.SearchKBResult{Articles: []article{}}
	words := strings.Fields(strings.ToLower(a.Query))
	if len(words) == 0 {
		return out, nil
	}
	for _, art := range all {
		if strings.Contains(strings.ToLower(art.Title), words[0]) && int64(len(out.Articles)) < a.TopK {
			out.Articles = append(out.Articles, art)
		}
	}
	return out, nil
}

// refundOrder is side-effecting: it moves money. It runs only in the effector,
// which gives it the intent's identity to pass downstream as an idempotency key.
func (be *backend) refundOrder(ctx context.Context, a tools.RefundOrderArgs) (tools.RefundOrderResult, error) {
	r, err := be.refund(ctx, "refund_order", a.OrderID, a.Amount, string(a.Reason))
	if err != nil {
		return tools.RefundOrderResult{}, err
	}
	return tools.RefundOrderResult{RefundID: r.ID, OrderID: r.OrderID, Amount: r.Amount, Reason: tools.RefundOrderResultReason(r.Reason)}, nil
}

// refundOverLimit moves more than refund_order may: its manifest says
// approval: required, so the effector runs it only once a person approved
// exactly this call, under the approval's execution id.
func (be *backend) refundOverLimit(ctx context.Context, a tools.RefundOverLimitArgs) (tools.RefundOverLimitResult, error) {
	r, err := be.refund(ctx, "refund_over_limit", a.OrderID, a.Amount, string(a.Reason))
	if err != nil {
		return tools.RefundOverLimitResult{}, err
	}
	return tools.RefundOverLimitResult{RefundID: r.ID, OrderID: r.OrderID, Amount: r.Amount}, nil
}

// refund is the payment provider applying a refund, keyed by the intent.
func (be *backend) refund(ctx context.Context, tool, orderID string, amount float64, reason string) (refund, error) {
	in, ok := effector.IntentFrom(ctx)
	if !ok {
		return refund{}, fmt.Errorf("%s runs only in the effector", tool)
	}
	o, ok := be.orders[orderID]
	if !ok {
		return refund{}, fmt.Errorf("no order %s", orderID)
	}
	if amount > o.Total {
		return refund{}, fmt.Errorf("refund %.2f exceeds the order total %.2f", amount, o.Total)
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	r := refund{ID: fmt.Sprintf("re_%03d", len(be.refunds)+1), OrderID: orderID, Amount: amount, Reason: reason, IdempotencyKey: in.ID}
	be.refunds = append(be.refunds, r)
	return r, nil
}

func (be *backend) sendEmail(ctx context.Context, a tools.SendEmailArgs) (tools.SendEmailResult, error) {
	in, ok := effector.IntentFrom(ctx)
	if !ok {
		return tools.SendEmailResult{}, errors.New("send_email runs only in the effector")
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	m := email{ID: fmt.Sprintf("msg_%03d", len(be.outbox)+1), To: a.To, Subject: a.Subject, IdempotencyKey: in.ID}
	be.outbox = append(be.outbox, m)
	return tools.SendEmailResult{MessageID: m.ID, To: m.To, Subject: m.Subject}, nil
}

// effects counts what the payment provider and the mail relay applied.
func (be *backend) effects() (refunds, emails int) {
	be.mu.Lock()
	defer be.mu.Unlock()
	return len(be.refunds), len(be.outbox)
}
