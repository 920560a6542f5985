package toolreg_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/toolbind"
)

// A contract-only Tool (NewTool) runs nothing: each way of reaching its
// function says why not and how to bind one.
func TestAContractOnlyToolSaysHowToBindIt(t *testing.T) {
	t.Parallel()
	readOnly := toolreg.NewTool(&toolreg.Spec{Name: "search", Description: "Search."})
	effect := toolreg.NewTool(&toolreg.Spec{Name: "refund", Description: "Refund.", SideEffect: true})
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"calling a read-only contract names the pipeline's binder", func() error {
			_, err := readOnly.Call(context.Background(), json.RawMessage(`{}`))
			return err
		}, `"search": bind it with bindings.ReadOnly`},
		{"decoding for a read-only contract names the pipeline's binder", func() error {
			_, err := readOnly.DecodeArgs(json.RawMessage(`{}`))
			return err
		}, `"search": bind it with bindings.ReadOnly`},
		{"decoding for a side-effecting contract names the effector's binder", func() error {
			_, err := effect.DecodeArgs(json.RawMessage(`{}`))
			return err
		}, `"refund": bind it with bindings.Effect`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.call()
			if !errors.Is(err, toolreg.ErrNotBound) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v; want ErrNotBound saying %q", err, tt.want)
			}
		})
	}
	if effect.Unwrap() != nil || effect.Bound() {
		t.Errorf("a contract-only tool reports a bound function")
	}
}

func TestCallRefusesASideEffectingToolBeforeAnythingElse(t *testing.T) {
	t.Parallel()
	ran := false
	tool := toolbind.Attach(&toolreg.Spec{Name: "refund", Description: "Refund.", SideEffect: true}, &toolbind.Binding{
		Call: func(context.Context, json.RawMessage) (any, error) { ran = true; return nil, nil },
	}).(*toolreg.Tool)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tool.Call(ctx, json.RawMessage(`not json`))
	var se *toolreg.SideEffectToolError
	if !errors.As(err, &se) || se.Name != "refund" || ran {
		t.Errorf("Call = %v (function ran: %v); want a *SideEffectToolError for \"refund\" and nothing run", err, ran)
	}
}

func TestCallReturnsAPanicAsAToolPanicError(t *testing.T) {
	t.Parallel()
	tool := toolbind.Attach(&toolreg.Spec{Name: "search", Description: "Search."}, &toolbind.Binding{
		Call: func(context.Context, json.RawMessage) (any, error) { panic("boom") },
	}).(*toolreg.Tool)
	_, err := tool.Call(context.Background(), json.RawMessage(`{}`))
	var pe *toolreg.ToolPanicError
	if !errors.As(err, &pe) || pe.Tool != "search" || pe.Value != "boom" || len(pe.Stack) == 0 {
		t.Errorf("Call = %v; want a *ToolPanicError for \"search\" carrying the value and a stack", err)
	}
}
