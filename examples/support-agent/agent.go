package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/beam-agents/toolreg/intent"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/runner"
)

// conversation is a scripted exchange: what the user said and what the model
// answered, tool calls included. One conversation is one activation.
type conversation struct {
	EntityKey string `json:"entity_key"`
	Seq       int64  `json:"seq"`
	Turns     []turn `json:"turns"`
}

type turn struct {
	User  string `json:"user,omitempty"`
	Model *struct {
		Text  string     `json:"text,omitempty"`
		Calls []toolCall `json:"calls,omitempty"`
	} `json:"model,omitempty"`
}

type toolCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	// Inline marks a call the agent code makes directly, as an adapted agent
	// framework might, instead of routing it by side effect: the runner must
	// refuse it if the tool has side effects.
	Inline bool `json:"inline,omitempty"`
}

// runsInline reports whether the call goes to the runner rather than to Act.
func (c toolCall) runsInline(t *toolreg.Tool) bool { return c.Inline || !t.SideEffect() }

// service is the agent service: the pipeline side (tables, runner) and the
// effector side (effect table, dedup store) in one process for the example.
type service struct {
	out      io.Writer
	backend  *backend
	bound    *bindings.Bound
	runner   *runner.Runner
	store    *sqlitestore.Store
	effector *effector.Effector
	dbPath   string
}

func start(ctx context.Context, manifests, state string, out io.Writer) (*service, error) {
	specs, err := loader.Load(manifests)
	if err != nil {
		return nil, err
	}
	be := newBackend()
	b := bindings.New(specs)
	be.bind(b)
	bound, err := b.Bind()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(state, 0o755); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	dbPath := filepath.Join(state, "effects.db")
	store, err := sqlitestore.Open(ctx, dbPath)
	if err != nil {
		return nil, err
	}
	eff, err := effector.New(bound.Effector, store, effector.WithClock(time.Now))
	if err != nil {
		store.Close()
		return nil, err
	}
	s := &service{out: out, backend: be, bound: bound, runner: runner.New(runner.WithMaxConcurrency(4)),
		store: store, effector: eff, dbPath: dbPath}
	s.printf("toolreg support-agent: %d tools from %s: %d read-only (inline), %d side-effecting (effector only)\n",
		len(specs), manifests, bound.Pipeline.Len()-bound.Effector.Len(), bound.Effector.Len())
	s.printf("effector dedup store: %s (SQLite)\n", dbPath)
	return s, nil
}

func (s *service) close() { s.store.Close() }

func (s *service) printf(format string, args ...any) { fmt.Fprintf(s.out, format, args...) }

// play runs the conversation as one activation, hands its intents to the
// effector, then replays the activation as a retried bundle would.
func (s *service) play(ctx context.Context, conv *conversation) error {
	// The activation's clock is its input event's time: a replay reuses it, so
	// it stages byte-identical intents.
	eventTime := time.Now().Truncate(time.Millisecond)

	s.printf("\n== activation %s/%d ==\n", conv.EntityKey, conv.Seq)
	first, err := s.activate(ctx, conv, eventTime, true)
	if err != nil {
		return err
	}
	s.printf("\n== effector: %d intents ==\n", len(first))
	if err := s.execute(ctx, first); err != nil {
		return err
	}

	s.printf("\n== replay of activation %s/%d (a retried bundle) ==\n", conv.EntityKey, conv.Seq)
	again, err := s.activate(ctx, conv, eventTime, false)
	if err != nil {
		return err
	}
	if len(again) != len(first) {
		return fmt.Errorf("the replay staged %d intents, the first run %d", len(again), len(first))
	}
	for i := range again {
		if !bytes.Equal(again[i], first[i]) {
			return fmt.Errorf("the replay's intent %d differs from the first run's", i)
		}
	}
	s.printf("the replay staged %d intents, byte-identical to the first run's\n", len(again))
	if err := s.execute(ctx, again); err != nil {
		return err
	}
	refunds, emails := s.backend.effects()
	s.printf("\n== downstream ==\npayment provider applied %d refund(s); mail relay sent %d email(s) in this process\n", refunds, emails)
	if refunds == 0 {
		s.printf("(the refund ran in an earlier run of this program: %s remembers it; delete it to start over)\n", s.dbPath)
	}
	return nil
}

// activate plays the conversation in a new activation and returns its drained
// intents as wire bytes, as the pipeline would publish them.
func (s *service) activate(ctx context.Context, conv *conversation, at time.Time, verbose bool) ([][]byte, error) {
	act := runner.NewActivation(s.bound.Pipeline, []byte(conv.EntityKey), conv.Seq,
		runner.WithClock(func() time.Time { return at }), runner.WithRunner(s.runner))
	say := func(format string, args ...any) {
		if verbose {
			s.printf(format, args...)
		}
	}
	for _, t := range conv.Turns {
		switch {
		case t.User != "":
			say("user:  %s\n", t.User)
		case t.Model != nil && t.Model.Text != "":
			say("model: %s\n", t.Model.Text)
		case t.Model != nil:
			if err := s.dispatch(ctx, act, t.Model.Calls, say); err != nil {
				return nil, err // a failed activation is never drained: it leaves nothing behind
			}
		}
	}
	intents, err := act.Drain()
	if err != nil {
		return nil, err
	}
	wire := make([][]byte, len(intents))
	for i, in := range intents {
		if wire[i], err = in.MarshalBinary(); err != nil {
			return nil, err
		}
	}
	return wire, nil
}

// dispatch routes one model turn's tool calls: read-only tools run inline and
// concurrently, side-effecting ones are staged in call order with Act. Errors
// a model can fix go back to it as the tool's result.
func (s *service) dispatch(ctx context.Context, act *runner.Activation, calls []toolCall, say func(string, ...any)) error {
	tools := make([]*toolreg.Tool, len(calls)) // nil for a name no tool has
	var inline []runner.Call
	for i, c := range calls {
		t, err := s.bound.Pipeline.Get(c.Name)
		if err != nil {
			say("model → %s %s\n        ✗ %v\n", c.Name, c.Args, err)
			continue
		}
		tools[i] = t
		if c.runsInline(t) {
			inline = append(inline, runner.Call{Tool: t, Args: c.Args})
		}
	}
	outcomes := s.runner.RunAll(ctx, inline) // in the order of inline
	for i, c := range calls {
		if tools[i] == nil {
			continue
		}
		if c.runsInline(tools[i]) {
			o := outcomes[0]
			outcomes = outcomes[1:]
			say("model → %s %s  (inline)\n", c.Name, c.Args)
			say("        %s\n", describe(o.Result, o.Err))
			continue
		}
		in, err := act.Act(c.Name, c.Args)
		say("model → %s %s  (Act)\n", c.Name, c.Args)
		if err != nil {
			say("        %s\n", describe(nil, err))
			continue
		}
		say("        staged intent %s (step %d): nothing runs until the activation succeeds\n", in.ID, in.StepIndex)
	}
	return nil
}

// describe renders a tool outcome as the trace shows it and as the model
// would be told.
func describe(res any, err error) string {
	var argErr *toolreg.ToolArgumentError
	var sideErr *toolreg.SideEffectToolError
	switch {
	case errors.As(err, &argErr):
		return "✗ refused, function not called; sent back to the model:\n          " +
			strings.ReplaceAll(argErr.ModelMessage(), "\n", "\n          ")
	case errors.As(err, &sideErr):
		return "✗ refused, function not called: " + err.Error()
	case err != nil:
		return "✗ " + err.Error()
	}
	b, _ := json.Marshal(res)
	return "← " + string(b)
}

// execute is the effector side: it reads each intent from its wire bytes and
// processes it once.
func (s *service) execute(ctx context.Context, wire [][]byte) error {
	for _, w := range wire {
		var in intent.Intent
		if err := in.UnmarshalBinary(w); err != nil {
			return err
		}
		refundsBefore, emailsBefore := s.backend.effects()
		res, err := s.effector.Process(ctx, &in)
		if err != nil {
			return err
		}
		refunds, emails := s.backend.effects()
		how := "executed now"
		if refunds == refundsBefore && emails == emailsBefore {
			how = "already done: the stored result, not executed again"
		}
		s.printf("%s %-12s %-8s %s  (%s)\n", in.ID, in.ToolName, res.Status, res.Payload, how)
	}
	return nil
}
