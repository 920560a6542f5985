package storetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/registry"
)

// testDecisions holds a store to the approval records: an approval request
// is found by its id, the first of many concurrent decisions wins, a
// contradicting one is refused, and the decision reads back as recorded.
// The store must be an effector.Inspector.
func testDecisions(t *testing.T, e *env, id string) {
	if _, ok := e.s.(effector.Inspector); !ok {
		t.Fatalf("%T is not an effector.Inspector, which approvals need", e.s)
	}
	ctx := context.Background()
	eff, err := effector.New(registry.New(), e.s, effector.WithLogger(slog.New(slog.DiscardHandler)),
		effector.WithApproval(func(context.Context, *intent.Intent) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	key := []byte(id)
	in := &intent.Intent{
		ID: intent.IntentID(key, 1, 0), EntityKey: key, Seq: 1, ToolName: "storetest_tool", ArgsJSON: []byte(`{"amount":1,"to":"a"}`),
		CreatedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(time.Hour).UnixMilli(), Kind: intent.KindApproval,
	}
	if res, err := eff.Process(ctx, in); err != nil || res.Status != intent.StatusOK {
		t.Fatalf("Process(APPROVAL) = %s, %v", res.Status, err)
	}
	if _, err := effector.LookupApproval(ctx, e.s, "storetest-no-such-approval"); !errors.Is(err, effector.ErrUnknownApproval) {
		t.Fatalf("LookupApproval of an unknown id: %v, want ErrUnknownApproval", err)
	}
	a, err := effector.LookupApproval(ctx, e.s, in.ID)
	if err != nil || a.State != effector.ApprovalPending || a.Tool != "storetest_tool" || string(a.Arguments) != `{"amount":1,"to":"a"}` {
		t.Fatalf("LookupApproval = %+v, %v; want it pending, with its call", a, err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			v := effector.Approve
			if i%2 == 1 {
				v = effector.Deny
			}
			_, errs[i] = effector.RecordDecision(ctx, e.s, in.ID, effector.Decision{Verdict: v, By: fmt.Sprint("person-", i), At: now})
		})
	}
	wg.Wait()
	a, err = effector.LookupApproval(ctx, e.s, in.ID)
	if err != nil || a.Decision == nil {
		t.Fatalf("LookupApproval after the decisions = %+v, %v", a, err)
	}
	won := 0
	for i, err := range errs {
		var conflict *effector.DecisionConflictError
		switch {
		case err == nil:
			won++
		case errors.As(err, &conflict):
			if conflict.Recorded.By != a.Decision.By {
				t.Errorf("decider %d was refused in favour of %q, but %q is recorded", i, conflict.Recorded.By, a.Decision.By)
			}
		default:
			t.Errorf("decider %d: %v", i, err)
		}
	}
	// The winner and every later one with the same verdict succeed.
	if won != 4 {
		t.Errorf("%d decisions succeeded, want the 4 with the winning verdict", won)
	}
	if !a.Decision.At.Equal(time.UnixMilli(now.UnixMilli())) {
		t.Errorf("decision at %v, want %v", a.Decision.At, now)
	}
}

// testForeignRecords holds a store to what approvals read of a record
// besides its result: the tool of the call it was claimed for. A result
// recorded by another tool under an approval's decision id is no decision,
// and one under any id that reads like an approval request of another
// tool is no approval (a tool's result can say anything, and under
// producer ids a tool's result can be recorded under any id).
func testForeignRecords(t *testing.T, e *env, id string) {
	ctx := context.Background()
	eff, err := effector.New(registry.New(), e.s, effector.WithLogger(slog.New(slog.DiscardHandler)),
		effector.WithApproval(func(context.Context, *intent.Intent) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	key := []byte(id)
	in := &intent.Intent{
		ID: intent.IntentID(key, 1, 0), EntityKey: key, Seq: 1, ToolName: "storetest_tool", ArgsJSON: []byte(`{"amount":1,"to":"a"}`),
		CreatedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(time.Hour).UnixMilli(), Kind: intent.KindApproval,
	}
	if res, err := eff.Process(ctx, in); err != nil || res.Status != intent.StatusOK {
		t.Fatalf("Process(APPROVAL) = %s, %v", res.Status, err)
	}
	complete := func(id string, call effector.Call, payload string) {
		t.Helper()
		c, err := e.s.Claim(ctx, id, call, time.Minute)
		if err != nil || c.State != effector.Claimed {
			t.Fatalf("Claim(%s) = %v, %v", id, c.State, err)
		}
		r := intent.Result{IntentID: id, Status: intent.StatusOK, Payload: []byte(payload), CompletedAtMs: now.UnixMilli()}
		b, err := r.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if err := e.s.Complete(ctx, id, c.Token, b, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	echo := effector.NewCall("echo", []byte(`{}`))
	complete(intent.DecisionID(in.ID), echo, fmt.Sprintf(`{"at_ms":%d,"by":"mallory","decision":"approved"}`, now.UnixMilli()))
	if a, err := effector.LookupApproval(ctx, e.s, in.ID); err == nil || a.State == effector.ApprovalApproved {
		t.Fatalf("LookupApproval with echo's result under the decision id = %v, %v; want an error, not approved", a.State, err)
	}
	if _, err := effector.RecordDecision(ctx, e.s, in.ID, effector.Decision{Verdict: effector.Approve, By: "ana", At: now}); err == nil {
		t.Fatal("RecordDecision over echo's result succeeded")
	}
	fake := "storetest-lookalike-" + id
	complete(fake, echo, fmt.Sprintf(`{"approval":"requested","arguments":{"amount":1,"to":"a"},"created_at_ms":%d,"execution_id":%q,"expires_at_ms":%d,"step":0,"tool":"storetest_tool"}`,
		now.UnixMilli(), intent.ExecutionID(fake), now.Add(time.Hour).UnixMilli()))
	if _, err := effector.LookupApproval(ctx, e.s, fake); !errors.Is(err, effector.ErrUnknownApproval) {
		t.Fatalf("LookupApproval of echo's result naming storetest_tool: %v, want ErrUnknownApproval", err)
	}
}
