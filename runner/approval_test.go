package runner_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"testing/fstest"
	"time"

	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/runner"
)

const approvalManifest = `name: approval
description: Refund a large amount, once a person approves.
side_effect: true
params:
  amount: {type: integer}
  reason: {type: string}
approval: required
approval_reason: Refunds above 500 need a second person.
approval_timeout: 1h
`

// TestActStagesAnApprovalIntentByteForByteAsBeamAgents: Act on a tool whose
// manifest says approval: required stages an APPROVAL intent with the exact
// canonical arguments and the decision timeout as its lifetime; staged at
// the fixture's position and time it is byte-identical to the Python
// runtime's tool_intent_approval.bin but for the id, which is derived here
// (the fixture's is a fixed string); and a replay stages the same bytes.
func TestActStagesAnApprovalIntentByteForByteAsBeamAgents(t *testing.T) {
	t.Parallel()
	specs, err := loader.LoadFS(fstest.MapFS{"a.yaml": {Data: []byte(approvalManifest)}}, "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bound, err := bindings.New(specs).Bind() // the pipeline holds contracts only
	if err == nil {
		t.Fatal("Bind accepted a manifest with no function bound")
	}
	b := bindings.New(specs, bindings.PipelineOnly())
	if bound, err = b.Bind(); err != nil {
		t.Fatal(err)
	}
	t0 := time.UnixMilli(1700000000000)
	stage := func() *intent.Intent {
		act := runner.NewActivation(bound.Pipeline, []byte("entity-1"), 7, runner.WithStartStep(3), runner.WithClock(func() time.Time { return t0 }))
		// Keys out of order and a number as 9000.0: the staged args are canonical.
		in, err := act.Act("approval", json.RawMessage(`{"reason":"refund","amount":9000.0}`))
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	in := stage()
	if in.Kind != intent.KindApproval || string(in.ArgsJSON) != `{"amount":9000,"reason":"refund"}` ||
		in.ExpiresAtMs != t0.Add(time.Hour).UnixMilli() || in.Attempt != 0 {
		t.Fatalf("staged %+v", in)
	}
	fixture, err := os.ReadFile("../intent/testdata/beam-agents-v1/tool_intent_approval.bin")
	if err != nil {
		t.Fatal(err)
	}
	var want intent.Intent
	if err := want.UnmarshalBinary(fixture); err != nil {
		t.Fatal(err)
	}
	want.ID = in.ID
	wantBytes, err := want.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	got, err := in.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wantBytes) {
		t.Errorf("staged bytes %x\nwant the fixture's (with our id) %x", got, wantBytes)
	}
	again, _ := stage().MarshalBinary()
	if !bytes.Equal(again, got) {
		t.Errorf("a replay staged other bytes")
	}
}
