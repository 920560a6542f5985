package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/runner"
)

type Order struct {
	ID    string `json:"id"`
	Total int    `json:"total"`
}

func TestResultGivesTheFunctionsTypeOrSaysWhichTypeItIs(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	t.Run("the function's type", func(t *testing.T) {
		t.Parallel()
		got, err := runner.Result[Order](Order{ID: "o-1", Total: 5}, nil)
		if err != nil || got != (Order{ID: "o-1", Total: 5}) {
			t.Errorf("Result = %+v, %v", got, err)
		}
	})
	t.Run("an error passes through with the zero value", func(t *testing.T) {
		t.Parallel()
		got, err := runner.Result[Order](Order{ID: "o-1"}, boom)
		if err != boom || got != (Order{}) {
			t.Errorf("Result = %+v, %v; want the zero Order and the error", got, err)
		}
	})
	t.Run("another type is a *ResultTypeError naming both", func(t *testing.T) {
		t.Parallel()
		got, err := runner.Result[*Order](Order{ID: "o-1"}, nil)
		var te *runner.ResultTypeError
		if !errors.As(err, &te) || te.Want != reflect.TypeFor[*Order]() || te.Got != reflect.TypeFor[Order]() || got != nil {
			t.Fatalf("Result = %v, %v; want a *ResultTypeError", got, err)
		}
		if want := "runner: the tool's result has type runner_test.Order, not *runner_test.Order: ask Result for the type its function returns"; err.Error() != want {
			t.Errorf("message = %q\nwant %q", err, want)
		}
	})
	t.Run("nil is the zero value of a type that can be nil", func(t *testing.T) {
		t.Parallel()
		if got, err := runner.Result[[]Order](nil, nil); err != nil || got != nil {
			t.Errorf("Result[[]Order](nil) = %v, %v", got, err)
		}
		if _, err := runner.Result[Order](nil, nil); err == nil {
			t.Errorf("Result[Order](nil) = nil error; an Order cannot be nil")
		}
	})
}

func TestResultOfRunTool(t *testing.T) {
	t.Parallel()
	b := bindings.New([]*toolreg.Spec{searchSpec()}, bindings.PipelineOnly())
	bindings.ReadOnly(b, "search", func(_ context.Context, a SearchArgs) ([]string, error) { return []string{a.Query}, nil })
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	act := runner.NewActivation(bound.Pipeline, []byte("k"), 1)
	hits, err := runner.Result[[]string](act.RunTool(context.Background(), "search", json.RawMessage(`{"query":"socks","exact":true,"tags":[]}`)))
	if err != nil || fmt.Sprint(hits) != "[socks]" {
		t.Errorf("Result(RunTool) = %v, %v", hits, err)
	}
	_, err = runner.Result[[]string](act.RunTool(context.Background(), "search", json.RawMessage(`{"query":5}`)))
	var ae *toolreg.ToolArgumentError
	if !errors.As(err, &ae) {
		t.Errorf("Result of a bad call = %v; want the *ToolArgumentError", err)
	}
}
