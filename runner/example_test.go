package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/runner"
)

func ExampleRunner_Run() {
	b := bindings.New([]*toolreg.Spec{searchSpec(), refundSpec()}, bindings.PipelineOnly())
	bindings.ReadOnly(b, "search", func(_ context.Context, a SearchArgs) ([]string, error) {
		return []string{fmt.Sprintf("%s (limit %d, exact %v, tags %q)", a.Query, a.Limit, a.Exact, a.Tags)}, nil
	})
	bound, err := b.Bind()
	if err != nil {
		panic(err)
	}
	r := runner.New()
	ctx := context.Background()

	search, _ := bound.Pipeline.Get("search")
	res, err := r.Run(ctx, search, json.RawMessage(`{"query":"socks","exact":"true","tags":["wool"]}`))
	fmt.Println(res, err)

	_, err = r.Run(ctx, search, json.RawMessage(`{"query":"socks","limit":500,"tags":["wool"]}`))
	var ae *toolreg.ToolArgumentError
	if errors.As(err, &ae) {
		fmt.Println(ae.ModelMessage())
	}

	refund, _ := bound.Pipeline.Get("refund")
	_, err = r.Run(ctx, refund, json.RawMessage(`{"order_id":"o-1"}`))
	fmt.Println(err)
	// Output:
	// [socks (limit 10, exact true, tags ["wool"])] <nil>
	// The call to search was not run: its arguments do not match the tool's parameters.
	// - "exact": expected boolean (required), got nothing
	// - "limit": expected at most 100, got 500
	// Fix these and call the tool again.
	// toolreg: tool "refund" has side effects and never runs inline: request it with Act so the effector executes it once
}

func ExampleRunner_RunAll() {
	b := bindings.New([]*toolreg.Spec{searchSpec()})
	bindings.ReadOnly(b, "search", func(_ context.Context, a SearchArgs) (int, error) {
		return a.Limit * 10, nil
	})
	bound, err := b.Bind()
	if err != nil {
		panic(err)
	}
	search, _ := bound.Pipeline.Get("search")

	out := runner.New(runner.WithMaxConcurrency(2)).RunAll(context.Background(), []runner.Call{
		{Tool: search, Args: json.RawMessage(`{"query":"a","limit":1,"exact":true,"tags":[]}`)},
		{Tool: search, Args: json.RawMessage(`{"query":"b","limit":"2","exact":true,"tags":[]}`)},
		{Tool: search, Args: json.RawMessage(`{"query":"c","exact":true}`)},
	})
	for i, o := range out {
		fmt.Println(i, o.Result, o.Err)
	}
	// Output:
	// 0 10 <nil>
	// 1 20 <nil>
	// 2 <nil> toolreg: search: invalid arguments: /tags: want an array (required), got nothing
}

func ExampleResult() {
	b := bindings.New([]*toolreg.Spec{searchSpec(), refundSpec()}, bindings.PipelineOnly())
	bindings.ReadOnly(b, "search", func(_ context.Context, a SearchArgs) ([]string, error) {
		return []string{a.Query + " (wool)", a.Query + " (cotton)"}, nil
	})
	bound, err := b.Bind()
	if err != nil {
		panic(err)
	}
	act := runner.NewActivation(bound.Pipeline, []byte("ticket-42"), 7)

	// RunTool returns any; Result gives the search function's []string.
	hits, err := runner.Result[[]string](act.RunTool(context.Background(), "search", json.RawMessage(`{"query":"socks","exact":true,"tags":[]}`)))
	fmt.Println(len(hits), hits[0], err)

	_, err = runner.Result[int](act.RunTool(context.Background(), "search", json.RawMessage(`{"query":"socks","exact":true,"tags":[]}`)))
	fmt.Println(err)
	// Output:
	// 2 socks (wool) <nil>
	// runner: the tool's result has type []string, not int: ask Result for the type its function returns
}
