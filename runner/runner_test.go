package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/runner"
)

func ptr[T any](v T) *T { return &v }

// searchSpec is the four-param read-only tool the runner tests use:
// search(query string, limit integer = 10 in 1..100, exact boolean, tags array of string).
func searchSpec() *toolreg.Spec {
	return &toolreg.Spec{
		Name: "search", Description: "Search the catalogue.", Pos: toolreg.Pos{File: "search.yaml", Line: 1},
		Params: []*toolreg.Param{
			{Name: "query", Schema: toolreg.Schema{Type: toolreg.TypeString, MinLength: ptr(1)}},
			{Name: "limit", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Default: json.Number("10"), HasDefault: true, Minimum: json.Number("1"), Maximum: json.Number("100")}},
			{Name: "exact", Schema: toolreg.Schema{Type: toolreg.TypeBoolean}},
			{Name: "tags", Schema: toolreg.Schema{Type: toolreg.TypeArray, Items: &toolreg.Schema{Type: toolreg.TypeString}, MaxItems: ptr(5)}},
		},
	}
}

type SearchArgs struct {
	Query string   `json:"query"`
	Limit int      `json:"limit"`
	Exact bool     `json:"exact"`
	Tags  []string `json:"tags"`
}

type SearchResult struct {
	Query string
	Hits  int
}

// refundSpec is a side-effecting tool.
func refundSpec() *toolreg.Spec {
	return &toolreg.Spec{
		Name: "refund", Description: "Refund an order.", SideEffect: true, Pos: toolreg.Pos{File: "refund.yaml", Line: 1},
		Params: []*toolreg.Param{{Name: "order_id", Schema: toolreg.Schema{Type: toolreg.TypeString}}},
	}
}

type RefundArgs struct {
	OrderID string `json:"order_id"`
}

// fixture binds search to fn and refund to a function that counts its calls,
// and returns the pipeline's two tools and that counter.
func fixture(t testing.TB, fn func(context.Context, SearchArgs) (SearchResult, error)) (search, refund *toolreg.Tool, refunds *atomic.Int64) {
	t.Helper()
	refunds = new(atomic.Int64)
	b := bindings.New([]*toolreg.Spec{searchSpec(), refundSpec()})
	bindings.ReadOnly(b, "search", fn)
	bindings.Effect(b, "refund", func(context.Context, RefundArgs) (bool, error) {
		refunds.Add(1)
		return true, nil
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	search, _ = bound.Pipeline.Get("search")
	refund, _ = bound.Pipeline.Get("refund")
	return search, refund, refunds
}

func TestRunValidArgumentsInvokeTheFunction(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args string
		want SearchArgs
	}{
		{"exact values pass through", `{"query":"socks","limit":3,"exact":true,"tags":["wool"]}`, SearchArgs{"socks", 3, true, []string{"wool"}}},
		{"an absent limit takes its default", `{"query":"socks","exact":false,"tags":[]}`, SearchArgs{"socks", 10, false, []string{}}},
		{"lax coercion turns strings into an integer and a boolean", `{"query":"socks","limit":"7","exact":"true","tags":["a","b"]}`, SearchArgs{"socks", 7, true, []string{"a", "b"}}},
		{"an integral float is an integer", `{"query":"socks","limit":7.0,"exact":false,"tags":[]}`, SearchArgs{"socks", 7, false, []string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got SearchArgs
			calls := 0
			search, _, _ := fixture(t, func(_ context.Context, a SearchArgs) (SearchResult, error) {
				calls++
				got = a
				return SearchResult{Query: a.Query, Hits: a.Limit * 2}, nil
			})
			res, err := runner.New().Run(context.Background(), search, json.RawMessage(tt.args))
			if err != nil {
				t.Fatalf("Run() error = %v", err)
			}
			if calls != 1 {
				t.Fatalf("the function ran %d times, want 1", calls)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("the function got (-want +got):\n%s", diff)
			}
			// The function's actual result value, not a copy in another shape.
			if diff := cmp.Diff(SearchResult{Query: tt.want.Query, Hits: tt.want.Limit * 2}, res); diff != "" {
				t.Errorf("Run() result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunInvalidArgumentsNeverReachTheFunction(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		args  string
		paths []string
	}{
		{"a missing required param is refused", `{"limit":3,"exact":true,"tags":[]}`, []string{"/query"}},
		{"a wrong type is refused", `{"query":"socks","limit":"ten","exact":true,"tags":[]}`, []string{"/limit"}},
		{"an unknown key is refused", `{"query":"socks","exact":true,"tags":[],"colour":"red"}`, []string{"/colour"}},
		{"a broken constraint is refused", `{"query":"socks","limit":500,"exact":true,"tags":[]}`, []string{"/limit"}},
		{"a number for a string param is refused", `{"query":5,"exact":true,"tags":[]}`, []string{"/query"}},
		{"every failing path is listed", `{"limit":0,"exact":"maybe","tags":[1]}`, []string{"/exact", "/limit", "/query", "/tags/0"}},
		{"malformed JSON is refused", `{"query":`, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			search, _, _ := fixture(t, func(context.Context, SearchArgs) (SearchResult, error) {
				calls++
				return SearchResult{}, nil
			})
			res, err := runner.New().Run(context.Background(), search, json.RawMessage(tt.args))
			var ae *toolreg.ToolArgumentError
			if !errors.As(err, &ae) {
				t.Fatalf("Run() error = %v, want a *toolreg.ToolArgumentError", err)
			}
			if calls != 0 || res != nil {
				t.Errorf("the function ran %d times and Run returned %v; want no call", calls, res)
			}
			if ae.Tool != "search" {
				t.Errorf("ToolArgumentError.Tool = %q, want search", ae.Tool)
			}
			var paths []string
			for _, p := range ae.Problems {
				paths = append(paths, p.Path)
				if p.Want == "" {
					t.Errorf("problem at %q says nothing of what was wanted", p.Path)
				}
			}
			if diff := cmp.Diff(tt.paths, paths); diff != "" {
				t.Errorf("failing paths (-want +got):\n%s", diff)
			}
			if msg := ae.ModelMessage(); !strings.Contains(msg, "search") || !strings.Contains(msg, "call the tool again") {
				t.Errorf("ModelMessage() = %q, want it to name the tool and ask for a corrected call", msg)
			}
		})
	}
}

func TestRunRefusesASideEffectingToolBeforeItsArguments(t *testing.T) {
	t.Parallel()
	_, refund, refunds := fixture(t, func(context.Context, SearchArgs) (SearchResult, error) { return SearchResult{}, nil })
	for _, args := range []string{`{"order_id":"o-1"}`, `{"order_id":`, `not json`, ``} {
		_, err := runner.New().Run(context.Background(), refund, json.RawMessage(args))
		var se *toolreg.SideEffectToolError
		if !errors.As(err, &se) || se.Name != "refund" {
			t.Errorf("Run(%q) error = %v, want a *toolreg.SideEffectToolError naming refund", args, err)
		}
	}
	if n := refunds.Load(); n != 0 {
		t.Errorf("refund ran %d times, want never", n)
	}
}

func TestRunWithADoneContextDoesNotInvoke(t *testing.T) {
	t.Parallel()
	calls := 0
	search, _, _ := fixture(t, func(context.Context, SearchArgs) (SearchResult, error) {
		calls++
		return SearchResult{}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := runner.New().Run(ctx, search, json.RawMessage(`{"query":"q","exact":true,"tags":[]}`))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run() error = %v, want context.Canceled", err)
	}
	if calls != 0 {
		t.Errorf("the function ran %d times, want never", calls)
	}
}

func TestRunRecoversAPanicNamingTheTool(t *testing.T) {
	t.Parallel()
	search, _, _ := fixture(t, func(context.Context, SearchArgs) (SearchResult, error) {
		panic("index out of range")
	})
	_, err := runner.New().Run(context.Background(), search, json.RawMessage(`{"query":"q","exact":true,"tags":[]}`))
	var pe *toolreg.ToolPanicError
	if !errors.As(err, &pe) {
		t.Fatalf("Run() error = %v, want a *toolreg.ToolPanicError", err)
	}
	if pe.Tool != "search" || !strings.Contains(err.Error(), `"search"`) || !strings.Contains(err.Error(), "index out of range") {
		t.Errorf("Run() error = %q, want it to name the tool and the panic", err)
	}
}

func TestRunReturnsTheFunctionsError(t *testing.T) {
	t.Parallel()
	errDown := errors.New("catalogue is down")
	search, _, _ := fixture(t, func(context.Context, SearchArgs) (SearchResult, error) {
		return SearchResult{Hits: 1}, errDown
	})
	res, err := runner.New().Run(context.Background(), search, json.RawMessage(`{"query":"q","exact":true,"tags":[]}`))
	if !errors.Is(err, errDown) || res != nil {
		t.Errorf("Run() = %v, %v; want nil, the function's error", res, err)
	}
}

func TestRunRefusesANilOrUnboundTool(t *testing.T) {
	t.Parallel()
	if _, err := runner.New().Run(context.Background(), nil, nil); err == nil || !strings.Contains(err.Error(), "nil *toolreg.Tool") {
		t.Errorf("Run(nil tool) error = %v, want one naming the nil tool", err)
	}
	contract := toolreg.NewTool(searchSpec())
	if _, err := runner.New().Run(context.Background(), contract, json.RawMessage(`{}`)); !errors.Is(err, toolreg.ErrNotBound) {
		t.Errorf("Run(contract-only tool) error = %v, want toolreg.ErrNotBound", err)
	}
}

func TestRunAllReturnsOutcomesInCallOrder(t *testing.T) {
	t.Parallel()
	// Each call waits until every call has started, so they can only all
	// finish if RunAll runs them at once; the later ones finish first.
	const n = 5
	var started sync.WaitGroup
	started.Add(n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a hang guard, not a speed check
	defer cancel()
	search, refund, refunds := fixture(t, func(ctx context.Context, a SearchArgs) (SearchResult, error) {
		started.Done()
		done := make(chan struct{})
		go func() { started.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			return SearchResult{}, ctx.Err()
		}
		return SearchResult{Query: a.Query, Hits: a.Limit}, nil
	})
	var calls []runner.Call
	for i := range n {
		calls = append(calls, runner.Call{Tool: search, Args: json.RawMessage(`{"query":"q","limit":` + string(rune('1'+i)) + `,"exact":true,"tags":[]}`)})
	}
	calls = append(calls,
		runner.Call{Tool: refund, Args: json.RawMessage(`{"order_id":"o-1"}`)},
		runner.Call{Tool: search, Args: json.RawMessage(`{"query":""}`)},
	)
	out := runner.New().RunAll(ctx, calls)
	if len(out) != len(calls) {
		t.Fatalf("RunAll returned %d outcomes for %d calls", len(out), len(calls))
	}
	for i := range n {
		if out[i].Err != nil || out[i].Result != (SearchResult{Query: "q", Hits: i + 1}) {
			t.Errorf("outcome %d = %+v, want hits %d", i, out[i], i+1)
		}
	}
	var se *toolreg.SideEffectToolError
	if !errors.As(out[n].Err, &se) {
		t.Errorf("outcome %d error = %v, want a *toolreg.SideEffectToolError", n, out[n].Err)
	}
	var ae *toolreg.ToolArgumentError
	if !errors.As(out[n+1].Err, &ae) {
		t.Errorf("outcome %d error = %v, want a *toolreg.ToolArgumentError", n+1, out[n+1].Err)
	}
	if refunds.Load() != 0 {
		t.Errorf("RunAll ran a side-effecting tool")
	}
}

func TestRunAllKeepsToItsConcurrencyLimit(t *testing.T) {
	t.Parallel()
	const limit, n = 2, 7
	var active, peak atomic.Int64
	// The first limit calls wait for each other, so the peak reaches the limit;
	// no call may ever see more than limit running.
	var pair sync.WaitGroup
	pair.Add(limit)
	var first atomic.Int64
	search, _, _ := fixture(t, func(ctx context.Context, a SearchArgs) (SearchResult, error) {
		cur := active.Add(1)
		defer active.Add(-1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		if first.Add(1) <= limit {
			pair.Done()
			pair.Wait()
		}
		return SearchResult{Hits: a.Limit}, nil
	})
	var calls []runner.Call
	for range n {
		calls = append(calls, runner.Call{Tool: search, Args: json.RawMessage(`{"query":"q","exact":true,"tags":[]}`)})
	}
	out := runner.New(runner.WithMaxConcurrency(limit)).RunAll(context.Background(), calls)
	for i, o := range out {
		if o.Err != nil {
			t.Errorf("outcome %d error = %v", i, o.Err)
		}
	}
	if p := peak.Load(); p != limit {
		t.Errorf("peak concurrency = %d, want %d", p, limit)
	}
}

func TestRunAllDoesNotStartCallsAfterCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	search, _, _ := fixture(t, func(context.Context, SearchArgs) (SearchResult, error) {
		calls.Add(1)
		cancel() // the first call ends the context; the queued ones must not run
		return SearchResult{}, nil
	})
	var cs []runner.Call
	for range 4 {
		cs = append(cs, runner.Call{Tool: search, Args: json.RawMessage(`{"query":"q","exact":true,"tags":[]}`)})
	}
	out := runner.New(runner.WithMaxConcurrency(1)).RunAll(ctx, cs)
	if n := calls.Load(); n != 1 {
		t.Errorf("the function ran %d times, want 1", n)
	}
	if out[0].Err != nil {
		t.Errorf("outcome 0 error = %v, want nil", out[0].Err)
	}
	for i, o := range out[1:] {
		if !errors.Is(o.Err, context.Canceled) {
			t.Errorf("outcome %d error = %v, want context.Canceled", i+1, o.Err)
		}
	}
}

// TestRunStrictToolTakesNoCoercion: a manifest's strict: true turns lax
// coercion off for the whole runner path (the bound decoder as well as the
// tool's checker): the call the lax tool accepts ("7" for an integer, "true"
// for a boolean) is refused at both paths, the function never runs, and the
// same call written with exact JSON types still runs. Act, which validates
// with the tool's checker (toolreg.Tool.CheckArgs), refuses it as well.
func TestRunStrictToolTakesNoCoercion(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	var got SearchArgs
	spec := searchSpec()
	spec.Strict = true
	// save_search is search's strict side-effecting twin: Act validates its
	// arguments with the tool's own checker, not the bound decoder.
	save := searchSpec()
	save.Name, save.SideEffect, save.Strict = "save_search", true, true
	b := bindings.New([]*toolreg.Spec{spec, save}, bindings.PipelineOnly())
	bindings.ReadOnly(b, "search", func(_ context.Context, a SearchArgs) (SearchResult, error) {
		calls.Add(1)
		got = a
		return SearchResult{Query: a.Query, Hits: a.Limit}, nil
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	search, _ := bound.Pipeline.Get("search")

	for _, run := range []struct {
		name string
		run  func(json.RawMessage) (any, error)
	}{
		{"runner.Run", func(a json.RawMessage) (any, error) { return runner.New().Run(context.Background(), search, a) }},
		{"Tool.Call", func(a json.RawMessage) (any, error) { return search.Call(context.Background(), a) }},
		{"Activation.Act", func(a json.RawMessage) (any, error) {
			return runner.NewActivation(bound.Pipeline, []byte("k"), 1, runner.WithClock(actClock)).Act("save_search", a)
		}},
	} {
		_, err := run.run(json.RawMessage(`{"query":"socks","limit":"7","exact":"true","tags":[]}`))
		var ae *toolreg.ToolArgumentError
		if !errors.As(err, &ae) {
			t.Fatalf("%s on a strict tool with coercible strings: error = %v, want a *toolreg.ToolArgumentError", run.name, err)
		}
		var paths []string
		for _, p := range ae.Problems {
			paths = append(paths, p.Path)
		}
		if diff := cmp.Diff([]string{"/exact", "/limit"}, paths); diff != "" {
			t.Errorf("%s: failing paths (-want +got):\n%s", run.name, diff)
		}
		if n := calls.Load(); n != 0 {
			t.Fatalf("%s: the strict tool's function ran %d times on coercible strings, want never", run.name, n)
		}
	}

	res, err := runner.New().Run(context.Background(), search, json.RawMessage(`{"query":"socks","limit":7,"exact":true,"tags":[]}`))
	if err != nil || res != (SearchResult{Query: "socks", Hits: 7}) || calls.Load() != 1 {
		t.Errorf("Run(exact types) = %v, %v (ran %d times); want the function's result, once", res, err, calls.Load())
	}
	if diff := cmp.Diff(SearchArgs{"socks", 7, true, []string{}}, got); diff != "" {
		t.Errorf("the function got (-want +got):\n%s", diff)
	}
}

// Malformed JSON from a model comes back as a message the model can act on,
// on the runner's fast path as on the reference one: where, what JSON
// wanted there, and to send one JSON object; never encoding/json's text.
func TestRunTellsTheModelWhereItsJSONBrokeAndWhatToSend(t *testing.T) {
	t.Parallel()
	search, _, _ := fixture(t, func(context.Context, SearchArgs) (SearchResult, error) { return SearchResult{}, nil })
	for _, args := range []string{`{"query": "socks", "limit": None}`, `{"query": nul}`, `{"query": "socks"}{"query": "shoes"}`, `{'query': 'socks'}`} {
		_, err := runner.New().Run(context.Background(), search, json.RawMessage(args))
		var ae *toolreg.ToolArgumentError
		if !errors.As(err, &ae) {
			t.Fatalf("Run(%s) error = %v, want a *toolreg.ToolArgumentError", args, err)
		}
		msg := ae.ModelMessage()
		for _, want := range []string{"malformed JSON at line 1, column ", "expected ", "found ", "send one JSON object and nothing else"} {
			if !strings.Contains(msg, want) {
				t.Errorf("Run(%s): ModelMessage() = %q, want it to say %q", args, msg, want)
			}
		}
		if strings.Contains(msg, "invalid character") || strings.Contains(msg, "literal null (expecting") {
			t.Errorf("Run(%s): encoding/json's own words reach the model: %q", args, msg)
		}
	}
}
