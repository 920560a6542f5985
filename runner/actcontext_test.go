package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/runner"
)

// TestActContextKeepsTheModelsToolCallIDWithTheIntent: the tool call id
// WithCallID puts in ActContext's ctx goes with the staged intent (its
// tool_call_id), signed with it; the intent id stays the position's, so a
// replay that passes the same call id stages byte-identical intents, and
// one that passes another stages the same id. Act stages no call id.
func TestActContextKeepsTheModelsToolCallIDWithTheIntent(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	key := []byte("k-0123456789abcdef0123456789abcdef")
	args := json.RawMessage(`{"order_id":"o-1","amount":30}`)
	stage := func(callID string) (*intent.Intent, []*intent.Intent) {
		t.Helper()
		a := runner.NewActivation(s.bound.Pipeline, []byte("customer-42"), 7, runner.WithClock(actClock), runner.WithSigningKey("k1", key))
		in, err := a.ActContext(runner.WithCallID(context.Background(), callID), "issue_refund", args)
		if err != nil {
			t.Fatal(err)
		}
		staged, err := a.Drain()
		if err != nil {
			t.Fatal(err)
		}
		return in, staged
	}
	in, staged := stage("call_1")
	if in.ToolCallID != "call_1" || len(staged) != 1 || staged[0].ToolCallID != "call_1" {
		t.Fatalf("ActContext staged tool call id %q (drained: %v); want call_1 on both", in.ToolCallID, staged)
	}
	if in.ID != intent.IntentID([]byte("customer-42"), 7, 0) {
		t.Errorf("intent id %s is not its position's", in.ID)
	}
	if err := staged[0].VerifyHMAC(map[string][]byte{"k1": key}); err != nil {
		t.Errorf("VerifyHMAC of the staged intent: %v", err)
	}
	forged := *staged[0]
	forged.ToolCallID = "call_2"
	if err := forged.VerifyHMAC(map[string][]byte{"k1": key}); !errors.Is(err, intent.ErrBadSignature) {
		t.Errorf("the signature does not cover the tool call id: VerifyHMAC after changing it = %v", err)
	}

	first, _ := in.MarshalBinary()
	replay, _ := stage("call_1")
	if again, _ := replay.MarshalBinary(); !bytes.Equal(again, first) {
		t.Errorf("a replay with the same call id staged\n%x\nwant\n%x", again, first)
	}
	other, _ := stage("call_9")
	if other.ID != in.ID || other.ToolCallID != "call_9" {
		t.Errorf("a replay with another call id staged id %s, call id %q; want the same id %s, call_9", other.ID, other.ToolCallID, in.ID)
	}

	plain, err := runner.NewActivation(s.bound.Pipeline, []byte("customer-42"), 7, runner.WithClock(actClock)).Act("issue_refund", args)
	if err != nil || plain.ToolCallID != "" {
		t.Errorf("Act staged tool call id %q, %v; want none", plain.ToolCallID, err)
	}
}

// TestActContextStagesNothingOnceItsContextEnded: a caller that gave up
// (its context ended) stages nothing, and the step cursor stays, so the
// retry stages the same intent.
func TestActContextStagesNothingOnceItsContextEnded(t *testing.T) {
	t.Parallel()
	s := newSupportAgent(t)
	a := runner.NewActivation(s.bound.Pipeline, []byte("customer-42"), 7, runner.WithClock(actClock))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	args := json.RawMessage(`{"order_id":"o-1","amount":30}`)
	if in, err := a.ActContext(ctx, "issue_refund", args); !errors.Is(err, context.Canceled) || in != nil {
		t.Fatalf("ActContext with an ended context = %v, %v; want context.Canceled and no intent", in, err)
	}
	if a.Step() != 0 {
		t.Errorf("step %d after a refused ActContext, want 0", a.Step())
	}
	in, err := a.ActContext(context.Background(), "issue_refund", args)
	if err != nil || in.StepIndex != 0 {
		t.Errorf("the retry staged step %v, %v; want step 0", in, err)
	}
	if staged, _ := a.Drain(); len(staged) != 1 {
		t.Errorf("drained %d intents, want the retry's only", len(staged))
	}
}
