package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/provider/dispatch"
	"github.com/beam-agents/toolreg/runner"
)

// conversation is one activation's exchange: what the user said and, for
// the scripted endpoint, what the model answers, tool calls included. Direct
// calls are made by the agent's own code, as an adapted agent framework
// might, without routing by side effect: the runner must refuse an effect.
type conversation struct {
	EntityKey string     `json:"entity_key"`
	Seq       int64      `json:"seq"`
	System    string     `json:"system,omitempty"`
	User      string     `json:"user"`
	Model     []reply    `json:"model"`
	Direct    []toolCall `json:"direct,omitempty"`
}

// reply is one scripted model reply: tool calls, or the final text.
type reply struct {
	Text  string     `json:"text,omitempty"`
	Calls []toolCall `json:"calls,omitempty"`
}

type toolCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// service is the agent service: the pipeline side (tables, runner) and the
// effector side (effect table, dedup store) in one process for the example.
type service struct {
	out      io.Writer
	backend  *backend
	bound    *bindings.Bound
	runner   *runner.Runner
	store    effector.DedupStore
	effector *effector.Effector
	dbPath   string // what the trace calls the store
	storeArg string // the store as toolreg's CLI takes it
	closeDB  func()
}

func start(ctx context.Context, manifests, state, storeSpec string, out io.Writer) (*service, error) {
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
	store, dbPath, storeArg, closeDB, err := openStore(ctx, storeSpec, state)
	if err != nil {
		return nil, err
	}
	eff, err := effector.New(bound.Effector, store, effector.WithClock(time.Now))
	if err != nil {
		closeDB()
		return nil, err
	}
	s := &service{out: out, backend: be, bound: bound, runner: runner.New(runner.WithMaxConcurrency(4)),
		store: store, effector: eff, dbPath: dbPath, storeArg: storeArg, closeDB: closeDB}
	s.printf("toolreg support-agent: %d tools from %s: %d read-only (inline), %d side-effecting (effector only)\n",
		len(specs), manifests, bound.Pipeline.Len()-bound.Effector.Len(), bound.Effector.Len())
	s.printf("effector dedup store: %s\n", dbPath)
	s.printf("traces: %s\n", traceDestination())
	return s, nil
}

func (s *service) close() { s.closeDB() }

func (s *service) printf(format string, args ...any) { fmt.Fprintf(s.out, format, args...) }

// maxReplies bounds the model replies one activation asks for: a model that
// keeps calling tools fails the activation instead of looping.
const maxReplies = 12

// play runs the conversation as one activation with the model, hands its
// intents to the effector, shows how their results answer the calls in the
// next turn, then replays the activation as a retried bundle would.
func (s *service) play(ctx context.Context, conv *conversation, models modelProvider) error {
	// The activation's clock is its input event's time: a replay reuses it, so
	// it stages byte-identical intents.
	eventTime := time.Now().Truncate(time.Millisecond)

	s.printf("model: %s\n", models.describe())
	s.printf("\n== activation %s/%d ==\n", conv.EntityKey, conv.Seq)
	first, err := s.activate(ctx, conv, models, eventTime, true)
	if err != nil {
		return err
	}
	s.printf("\n== effector: %d intents ==\n", len(first.wire))
	results, err := s.execute(ctx, first.wire)
	if err != nil {
		return err
	}
	if err := s.decide(ctx); err != nil {
		return err
	}
	s.printf("\n== next turn: each result answers the call that staged it ==\n")
	for _, o := range first.staged {
		r, ok := results[o.Intent.ID]
		if !ok {
			return fmt.Errorf("no result for intent %s", o.Intent.ID)
		}
		msg, err := first.model.answer(o.Call.ID, r)
		if err != nil {
			return err
		}
		s.printf("%s\n", msg)
	}

	replay, closeReplay, err := models.replay()
	if err != nil {
		return err
	}
	defer closeReplay()
	s.printf("\n== replay of activation %s/%d (a retried bundle) ==\n", conv.EntityKey, conv.Seq)
	again, err := s.activate(ctx, conv, replay, eventTime, false)
	if err != nil {
		return err
	}
	if len(again.wire) != len(first.wire) {
		return fmt.Errorf("the replay staged %d intents, the first run %d", len(again.wire), len(first.wire))
	}
	for i := range again.wire {
		if !bytes.Equal(again.wire[i], first.wire[i]) {
			return fmt.Errorf("the replay's intent %d differs from the first run's", i)
		}
	}
	s.printf("the replay staged %d intents, byte-identical to the first run's\n", len(again.wire))
	if _, err := s.execute(ctx, again.wire); err != nil {
		return err
	}
	n, err := s.effector.ResumeDecided(ctx, func(context.Context, intent.Result) error { return nil })
	if err != nil {
		return err
	}
	s.printf("decisions carried out again: %d (each approved call ran once)\n", n)
	refunds, emails := s.backend.effects()
	s.printf("\n== downstream ==\npayment provider applied %d refund(s); mail relay sent %d email(s) in this process\n", refunds, emails)
	if refunds == 0 {
		s.printf("(the refund ran in an earlier run of this program: %s remembers it; delete it to start over)\n", s.dbPath)
	}
	return nil
}

// activated is what one activation gave: its drained intents as wire bytes,
// the outcomes that staged them, and its conversation.
type activated struct {
	wire   [][]byte
	staged []dispatch.Outcome
	model  chatModel
}

// activate talks with the model in a new activation until it answers without
// tool calls, makes the script's direct calls, and drains the intents, as the
// pipeline would publish them. A failed activation is never drained: it
// leaves nothing behind.
func (s *service) activate(ctx context.Context, conv *conversation, models modelProvider, at time.Time, verbose bool) (*activated, error) {
	act := runner.NewActivation(s.bound.Pipeline, []byte(conv.EntityKey), conv.Seq,
		runner.WithClock(func() time.Time { return at }), runner.WithRunner(s.runner))
	say := func(format string, args ...any) {
		if verbose {
			s.printf(format, args...)
		}
	}
	m, err := models.open(conv)
	if err != nil {
		return nil, err
	}
	out := &activated{model: m}
	say("user:  %s\n", conv.User)
	for n := 0; ; n++ {
		if n == maxReplies {
			return nil, fmt.Errorf("the model still calls tools after %d replies: the activation fails", maxReplies)
		}
		text, outs, err := m.ask(ctx, act)
		if err != nil {
			return nil, err
		}
		if text != "" {
			say("model: %s\n", text)
		}
		for _, o := range outs {
			say("%s", describe(o))
			if o.Status == dispatch.Staged {
				out.staged = append(out.staged, o)
			}
		}
		if len(outs) == 0 {
			break
		}
	}
	for _, c := range conv.Direct {
		// The agent's own code calling a tool directly: the runner refuses
		// an effect before it looks at the arguments.
		res, err := act.RunTool(ctx, c.Name, c.Args)
		args, cerr := compact(c.Args)
		if cerr != nil {
			args = c.Args
		}
		say("agent → %s %s  (called directly, as an adapted framework might)\n", c.Name, args)
		say("        %s\n", describeResult(res, err))
	}
	intents, err := act.Drain()
	if err != nil {
		return nil, err
	}
	out.wire = make([][]byte, len(intents))
	for i, in := range intents {
		if out.wire[i], err = in.MarshalBinary(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// describe renders one dispatched call as the trace shows it.
func describe(o dispatch.Outcome) string {
	c := o.Call
	var argErr *toolreg.ToolArgumentError
	switch {
	case o.Status == dispatch.Staged:
		return fmt.Sprintf("model → %s %s  (Act)\n        staged intent %s (step %d): nothing runs until the activation succeeds\n", c.Name, c.Args, o.Intent.ID, o.Intent.StepIndex)
	case o.Status == dispatch.Ran:
		return fmt.Sprintf("model → %s %s  (inline)\n        ← %s\n", c.Name, c.Args, o.Text)
	case errors.As(o.Err, &argErr):
		return fmt.Sprintf("model → %s %s\n        ✗ refused, function not called; sent back to the model:\n          %s\n", c.Name, c.Args, strings.ReplaceAll(o.Text, "\n", "\n          "))
	}
	return fmt.Sprintf("model → %s %s\n        ✗ %s; sent back to the model:\n          %s\n", c.Name, c.Args, o.Status, o.Text)
}

// describeResult renders a direct call's outcome.
func describeResult(res any, err error) string {
	var sideErr *toolreg.SideEffectToolError
	switch {
	case errors.As(err, &sideErr):
		return "✗ refused, function not called: " + err.Error()
	case err != nil:
		return "✗ " + err.Error()
	}
	b, _ := json.Marshal(res)
	return "← " + string(b)
}

// execute is the effector side: it reads each intent from its wire bytes,
// processes it once, and returns the results by intent id.
func (s *service) execute(ctx context.Context, wire [][]byte) (map[string]*intent.Result, error) {
	results := make(map[string]*intent.Result, len(wire))
	for _, w := range wire {
		var in intent.Intent
		if err := in.UnmarshalBinary(w); err != nil {
			return nil, err
		}
		refundsBefore, emailsBefore := s.backend.effects()
		res, err := s.effector.Process(ctx, &in)
		if err != nil {
			return nil, err
		}
		refunds, emails := s.backend.effects()
		how := "executed now"
		if refunds == refundsBefore && emails == emailsBefore {
			how = "already done: the stored result, not executed again"
		}
		payload := string(res.Payload)
		if in.Kind == intent.KindApproval {
			payload = "approval requested, to run as " + intent.ExecutionID(in.ID)
			how = "pending: nothing runs until a person approves it"
			if a, err := effector.LookupApproval(ctx, s.store, in.ID); err == nil && a.State != effector.ApprovalPending {
				how = "already " + a.State.String() + ": the stored request, not asked again"
			}
		}
		s.printf("%s %-12s %-8s %s  (%s)\n", in.ID, in.ToolName, res.Status, payload, how)
		results[in.ID] = &res
	}
	return results, nil
}

// decide is the supervisor's side: it lists the approvals waiting in the
// effector's store and decides each, as the `toolreg approvals approve|deny`
// command it prints would (the same call, effector.RecordDecision, made in
// this process), then has the effector carry the decisions out: an approved
// call runs once, a denied one is answered REJECTED with the note. This
// supervisor approves refunds for a fault and denies goodwill ones.
func (s *service) decide(ctx context.Context) error {
	s.printf("\n== approvals: a supervisor decides each, as the command under it does from the repository's root ==\n")
	var pending []effector.Approval
	err := effector.Approvals(ctx, s.store, func(a effector.Approval) error {
		if a.State == effector.ApprovalPending {
			pending = append(pending, a)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(pending) == 0 {
		s.printf("no approval waits (decided in an earlier run: %s remembers it)\n", s.dbPath)
	}
	for _, a := range pending {
		var args struct {
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(a.Arguments, &args); err != nil {
			return err
		}
		d := effector.Decision{Verdict: effector.Approve, By: "supervisor"}
		if args.Reason == "goodwill" {
			d = effector.Decision{Verdict: effector.Deny, By: "supervisor", Note: "a goodwill credit above 100 is not our policy: offer a voucher"}
		}
		if _, err := effector.RecordDecision(ctx, s.store, a.ID, d); err != nil {
			return err
		}
		note, noteFlag := "", ""
		if d.Note != "" {
			note, noteFlag = ": "+d.Note, " -note "+shellQuote(d.Note)
		}
		verb := map[effector.Verdict]string{effector.Approve: "approve", effector.Deny: "deny"}[d.Verdict]
		s.printf("%s %s %s  (%s)\n        $ go run ./cmd/toolreg approvals %s -by %s%s %s %s\n        → %s by %s%s\n",
			a.ID, a.Tool, a.Arguments, a.Reason, verb, shellQuote(d.By), noteFlag, shellQuote(s.storeArg), shellQuote(a.ID), d.Verdict, d.By, note)
	}
	n, err := s.effector.ResumeDecided(ctx, func(_ context.Context, r intent.Result) error {
		out := string(r.Payload)
		if r.ErrorMessage != "" {
			out = r.ErrorMessage
		}
		s.printf("%s %-8s %s  (the decision, carried out)\n", r.IntentID, r.Status, out)
		return nil
	})
	if err != nil {
		return err
	}
	s.printf("the effector carried out %d decision(s)\n", n)
	return nil
}

// shellQuote writes word so that a POSIX shell reads it back as it is: as it
// is when it holds nothing a shell treats specially, else single-quoted.
func shellQuote(word string) string {
	if word != "" && strings.Trim(word, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+=,-") == "" {
		return word
	}
	return "'" + strings.ReplaceAll(word, "'", `'\''`) + "'"
}
