package effectortest

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/registry"
)

// Tool is the name of the one side-effecting tool in Table.
const Tool = "apply"

// ApplyArgs are the tool's arguments.
type ApplyArgs struct {
	Key string `json:"key"`
}

// Calls counts the executions of the tool by intent id.
type Calls struct {
	mu sync.Mutex
	n  map[string]int
}

// Of returns how many times the tool ran for intent id.
func (c *Calls) Of(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
}

// Total returns how many times the tool ran in all.
func (c *Calls) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := 0
	for _, n := range c.n {
		t += n
	}
	return t
}

// Table returns an effect table holding the tool "apply", which records each
// call by its intent's id (IntentFrom), runs the hooks (to block, or to fail),
// and returns {"applied": key}.
func Table(tb testing.TB, hooks ...func(ctx context.Context) error) (*registry.Registry, *Calls) {
	tb.Helper()
	calls := &Calls{n: map[string]int{}}
	spec := &toolreg.Spec{
		Name:        Tool,
		Description: "Apply an effect once.",
		SideEffect:  true,
		Params:      []*toolreg.Param{{Name: "key", Schema: toolreg.Schema{Type: toolreg.TypeString}}},
	}
	b := bindings.New([]*toolreg.Spec{spec})
	bindings.Effect(b, Tool, func(ctx context.Context, a ApplyArgs) (map[string]string, error) {
		info, _ := effector.IntentFrom(ctx)
		id := info.ID
		calls.mu.Lock()
		calls.n[id]++
		calls.mu.Unlock()
		for _, h := range hooks {
			if err := h(ctx); err != nil {
				return nil, err
			}
		}
		return map[string]string{"applied": a.Key}, nil
	})
	bound, err := b.Bind()
	if err != nil {
		tb.Fatalf("effectortest: binding the apply tool: %v", err)
	}
	return bound.Effector, calls
}

// Intent returns an unsigned TOOL intent for "apply" at (entity, seq, step),
// expiring an hour from now.
func Intent(entity string, seq int64, step uint32) *intent.Intent {
	now := time.Now()
	return &intent.Intent{
		ID:          intent.IntentID([]byte(entity), seq, step),
		EntityKey:   []byte(entity),
		Seq:         seq,
		StepIndex:   step,
		ToolName:    Tool,
		ArgsJSON:    []byte(`{"key":"` + entity + `"}`),
		CreatedAtMs: now.UnixMilli(),
		ExpiresAtMs: now.Add(time.Hour).UnixMilli(),
		Attempt:     1,
		Kind:        intent.KindTool,
	}
}

// Effector returns an effector over Table's tool and store, logging nothing.
func Effector(tb testing.TB, store effector.DedupStore, opts ...effector.Option) (*effector.Effector, *Calls) {
	tb.Helper()
	return EffectorWithHooks(tb, store, nil, opts...)
}

// EffectorWithHooks is Effector with hooks the tool runs (see Table).
func EffectorWithHooks(tb testing.TB, store effector.DedupStore, hooks []func(context.Context) error, opts ...effector.Option) (*effector.Effector, *Calls) {
	tb.Helper()
	table, calls := Table(tb, hooks...)
	opts = append([]effector.Option{effector.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	e, err := effector.New(table, store, opts...)
	if err != nil {
		tb.Fatalf("effectortest: effector.New: %v", err)
	}
	return e, calls
}
