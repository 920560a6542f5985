package bindings_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/loader"
)

// orderManifest declares get_order's result: five properties, one optional.
const orderManifest = `name: get_order
description: Look up an order.
params:
  order_id:
    type: string
returns:
  type: object
  properties:
    order_id:
      type: string
    status:
      type: string
      enum: [open, shipped]
    total_cents:
      type: integer
      minimum: 0
    lines:
      type: array
      items:
        type: object
        properties:
          sku: {type: string}
          qty: {type: integer}
    shipped_at:
      type: string
      format: date-time
      required: false
`

func loadOrder(t *testing.T) []*toolreg.Spec {
	t.Helper()
	specs, err := loader.LoadFS(fstest.MapFS{"orders.yaml": {Data: []byte(orderManifest)}}, "orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

type OrderArgs struct {
	OrderID string `json:"order_id"`
}

type Line struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

// Order is a result type that fits orderManifest exactly.
type Order struct {
	OrderID    string     `json:"order_id"`
	Status     string     `json:"status"`
	TotalCents int64      `json:"total_cents"`
	Lines      []Line     `json:"lines"`
	ShippedAt  *time.Time `json:"shipped_at,omitempty"`
}

func TestBindAcceptsAResultTypeThatFitsReturns(t *testing.T) {
	t.Parallel()
	for name, bind := range map[string]func(*bindings.Binder){
		"struct": func(b *bindings.Binder) {
			bindings.ReadOnly(b, "get_order", func(context.Context, OrderArgs) (Order, error) { return Order{}, nil })
		},
		"pointer to struct": func(b *bindings.Binder) {
			bindings.ReadOnly(b, "get_order", func(context.Context, OrderArgs) (*Order, error) { return nil, nil })
		},
	} {
		b := bindings.New(loadOrder(t))
		bind(b)
		if _, err := b.Bind(); err != nil {
			t.Errorf("%s: Bind: %v", name, err)
		}
	}
}

// BadOrder disagrees with orderManifest's returns in every way the binder
// checks.
type BadOrder struct {
	OrderID    *string           `json:"order_id"`         // required, but a nil pointer encodes as null
	Status     string            `json:"status,omitempty"` // required, but omitempty leaves "" out
	TotalCents string            `json:"total_cents"`      // integer declared
	Lines      []map[string]bool `json:"lines"`            // items are objects with properties
	ShippedAt  *string           `json:"shipped_at"`       // optional and nilable without omitempty
	Internal   int               `json:"internal"`         // not in returns
	Note       string            `json:"note,omitempty"`   // not in returns either
	Hidden     string            `json:"-"`                // skipped: fine
}

// TestBindListsEveryResultMismatchAtOnce: one Bind names each disagreement
// of the result type with returns, at the manifest's line, with the Go field.
func TestBindListsEveryResultMismatchAtOnce(t *testing.T) {
	t.Parallel()
	b := bindings.New(loadOrder(t))
	bindings.ReadOnly(b, "get_order", func(context.Context, OrderArgs) (BadOrder, error) { return BadOrder{}, nil })
	_, err := b.Bind()
	var de *toolreg.ToolDefinitionError
	if !errors.As(err, &de) {
		t.Fatalf("Bind() error = %v, want a *toolreg.ToolDefinitionError", err)
	}
	var got []string
	for _, p := range de.Problems {
		got = append(got, p.Pos.String()+" "+p.Path)
	}
	want := []string{
		"orders.yaml:9:5 returns.properties.order_id",
		"orders.yaml:11:5 returns.properties.status",
		"orders.yaml:14:5 returns.properties.total_cents",
		"orders.yaml:17:5 returns.properties.lines.items",
		"orders.yaml:24:5 returns.properties.shipped_at",
		"orders.yaml:1:1 returns.properties",
		"orders.yaml:1:1 returns.properties",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s\nerror:\n%s", diff, err)
	}
	msg := err.Error()
	for _, part := range []string{
		"field bindings_test.BadOrder.OrderID is a pointer (*string)",
		"field bindings_test.BadOrder.Status has omitempty",
		"field bindings_test.BadOrder.TotalCents has type string, which cannot hold the manifest's integer values",
		"field bindings_test.BadOrder.Lines[] has type map[string]bool",
		"field bindings_test.BadOrder.ShippedAt (*string) encodes nil as null",
		`field bindings_test.BadOrder.Internal (json "internal") is not in the manifest's returns`,
		`field bindings_test.BadOrder.Note (json "note") is not in the manifest's returns`,
	} {
		if !strings.Contains(msg, part) {
			t.Errorf("error does not say %q:\n%s", part, msg)
		}
	}
}

// TestBindNamesAResultPropertyWithNoField: a property missing from the Go
// type is named with the field to add, omitempty for an optional one.
func TestBindNamesAResultPropertyWithNoField(t *testing.T) {
	t.Parallel()
	type Partial struct {
		OrderID    string `json:"order_id"`
		Status     string `json:"status"`
		TotalCents int    `json:"total_cents"`
	}
	b := bindings.New(loadOrder(t))
	bindings.ReadOnly(b, "get_order", func(context.Context, OrderArgs) (Partial, error) { return Partial{}, nil })
	_, err := b.Bind()
	if err == nil {
		t.Fatal("Bind accepted a result type without lines and shipped_at")
	}
	for _, part := range []string{
		"orders.yaml:17:5: get_order: returns.properties.lines: result property \"lines\" has no field in bindings_test.Partial: add Lines a slice of structs with one field per property `json:\"lines\"`",
		"orders.yaml:24:5: get_order: returns.properties.shipped_at: result property \"shipped_at\" has no field in bindings_test.Partial: add ShippedAt string `json:\"shipped_at,omitempty\"`",
	} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error does not say %q:\n%s", part, err)
		}
	}
}

// TestBindChecksAScalarResult: returns of type integer asks for an integer R.
func TestBindChecksAScalarResult(t *testing.T) {
	t.Parallel()
	specs, err := loader.LoadFS(fstest.MapFS{"count.yaml": {Data: []byte("name: count\ndescription: Count.\nreturns:\n  type: integer\n")}}, "count.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := bindings.New(specs)
	bindings.ReadOnly(b, "count", func(context.Context, struct{}) (string, error) { return "", nil })
	if _, err := b.Bind(); err == nil || !strings.Contains(err.Error(), "count.yaml:1:1: count: returns: field string has type string, which cannot hold the manifest's integer values: use int") {
		t.Errorf("Bind() = %v, want the string result refused for returns of type integer", err)
	}
	b = bindings.New(specs)
	bindings.ReadOnly(b, "count", func(context.Context, struct{}) (int, error) { return 0, nil })
	if _, err := b.Bind(); err != nil {
		t.Errorf("Bind of an int result: %v", err)
	}
}
