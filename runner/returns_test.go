package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/fstest"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/runner"
)

// quoteManifest is a read-only tool with a five-field result.
const quoteManifest = `name: quote
description: Quote a shipment.
params:
  sku:
    type: string
returns:
  type: object
  properties:
    sku: {type: string, minLength: 1}
    price_cents: {type: integer, minimum: 0}
    currency: {type: string, enum: [EUR, USD]}
    in_stock: {type: boolean}
    weight_kg: {type: number, exclusiveMinimum: 0}
`

type quoteArgs struct {
	SKU string `json:"sku"`
}

type quote struct {
	SKU        string  `json:"sku"`
	PriceCents int     `json:"price_cents"`
	Currency   string  `json:"currency"`
	InStock    bool    `json:"in_stock"`
	WeightKg   float64 `json:"weight_kg"`
}

// quoteTool binds fn to quote and returns the pipeline's tool.
func quoteTool(tb testing.TB, fn func(context.Context, quoteArgs) (quote, error)) *toolreg.Tool {
	tb.Helper()
	specs, err := loader.LoadFS(fstest.MapFS{"quote.yaml": {Data: []byte(quoteManifest)}}, "quote.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	b := bindings.New(specs)
	bindings.ReadOnly(b, "quote", fn)
	bound, err := b.Bind()
	if err != nil {
		tb.Fatal(err)
	}
	t, err := bound.Pipeline.Get("quote")
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// TestAnOffContractResultNeverReachesTheCaller: a function whose result
// breaks returns ran, but Run hands on a *toolreg.ToolResultError naming
// the paths, never the value; RunAll and an Activation's RunTool alike.
func TestAnOffContractResultNeverReachesTheCaller(t *testing.T) {
	t.Parallel()
	calls := 0
	tool := quoteTool(t, func(_ context.Context, a quoteArgs) (quote, error) {
		calls++
		return quote{SKU: a.SKU, PriceCents: -5, Currency: "GBP", WeightKg: 0}, nil
	})
	check := func(where string, res any, err error) {
		t.Helper()
		var re *toolreg.ToolResultError
		if !errors.As(err, &re) {
			t.Fatalf("%s: error = %v, want a *toolreg.ToolResultError", where, err)
		}
		if res != nil {
			t.Errorf("%s: result %#v reached the caller", where, res)
		}
		var paths []string
		for _, p := range re.Problems {
			paths = append(paths, p.Path)
		}
		if want := []string{"/price_cents", "/currency", "/weight_kg"}; !equal(paths, want) {
			t.Errorf("%s: failing paths %v, want %v (%v)", where, paths, want, err)
		}
		if re.Tool != "quote" {
			t.Errorf("%s: Tool = %q", where, re.Tool)
		}
	}
	args := json.RawMessage(`{"sku":"A1"}`)
	res, err := runner.New().Run(context.Background(), tool, args)
	check("Run", res, err)
	out := runner.New().RunAll(context.Background(), []runner.Call{{Tool: tool, Args: args}})
	check("RunAll", out[0].Result, out[0].Err)
	if calls != 2 {
		t.Errorf("the function ran %d times, want 2: the check comes after the call", calls)
	}
}

// TestWithoutResultValidationHandsTheResultOn: the documented unsafe option
// turns the check off.
func TestWithoutResultValidationHandsTheResultOn(t *testing.T) {
	t.Parallel()
	tool := quoteTool(t, func(_ context.Context, a quoteArgs) (quote, error) {
		return quote{SKU: a.SKU, Currency: "GBP", WeightKg: 1}, nil
	})
	res, err := runner.New(runner.WithoutResultValidation()).Run(context.Background(), tool, json.RawMessage(`{"sku":"A1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if q, ok := res.(quote); !ok || q.Currency != "GBP" {
		t.Errorf("result = %#v", res)
	}
	res, err = runner.New().Run(context.Background(), tool, json.RawMessage(`{"sku":"A1"}`))
	if err == nil {
		t.Errorf("with validation on, Run handed on %#v", res)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var sinkQuote any

// BenchmarkResultValidation measures Runner.Run of a read-only tool with a
// five-field result, with the result checked against returns (the default)
// and without (WithoutResultValidation), in the same run. Target (issue 16):
// the check adds under 50% to the call.
func BenchmarkResultValidation(b *testing.B) {
	tool := quoteTool(b, func(_ context.Context, a quoteArgs) (quote, error) {
		return quote{SKU: a.SKU, PriceCents: 1250, Currency: "EUR", InStock: true, WeightKg: 2.5}, nil
	})
	args := json.RawMessage(`{"sku":"A1"}`)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		r    *runner.Runner
	}{{"check=off", runner.New(runner.WithoutResultValidation())}, {"check=on", runner.New()}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := c.r.Run(ctx, tool, args)
				if err != nil {
					b.Fatal(err)
				}
				sinkQuote = res
			}
		})
	}
}
