package runner_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	toolreg "github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/registry"
	"github.com/beam-agents/toolreg/runner"
)

// TestActStampsTheActivationsTraceID: with WithTraceID every staged intent
// carries the activation's trace id, byte-identical to the Python runtime's
// traced fixture but for the id (which is derived here); a replay stages
// the same bytes; a trace id that is not 16 non-zero bytes makes Act fail.
func TestActStampsTheActivationsTraceID(t *testing.T) {
	t.Parallel()
	fixture, err := os.ReadFile("../intent/testdata/beam-agents-v1/tool_intent_traced.bin")
	if err != nil {
		t.Fatal(err)
	}
	var want intent.Intent
	if err := want.UnmarshalBinary(fixture); err != nil {
		t.Fatal(err)
	}
	pipeline := postTable(t)
	stage := func(opts ...runner.ActivationOption) (*intent.Intent, error) {
		opts = append([]runner.ActivationOption{runner.WithClock(func() time.Time { return time.UnixMilli(want.CreatedAtMs) }),
			runner.WithIntentTTL(time.Minute), runner.WithStartStep(want.StepIndex)}, opts...)
		return runner.NewActivation(pipeline, want.EntityKey, want.Seq, opts...).Act("http.post", json.RawMessage(want.ArgsJSON))
	}
	in, err := stage(runner.WithTraceID(want.TraceID))
	if err != nil {
		t.Fatal(err)
	}
	want.ID = in.ID
	wantBytes, _ := want.MarshalBinary()
	got, _ := in.MarshalBinary()
	if !bytes.Equal(got, wantBytes) {
		t.Fatalf("staged %x\nwant   %x (the traced fixture, with the derived id)", got, wantBytes)
	}
	again, err := stage(runner.WithTraceID(want.TraceID))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := again.MarshalBinary(); !bytes.Equal(b, got) {
		t.Error("a replay with the same trace id staged other bytes")
	}
	for _, bad := range [][]byte{nil, {1, 2, 3}, make([]byte, 16), make([]byte, 32)} {
		if _, err := stage(runner.WithTraceID(bad)); err == nil || !strings.Contains(err.Error(), "16 bytes") {
			t.Errorf("WithTraceID(%x): Act error %v, want it refused", bad, err)
		}
	}
}

// postTable is a pipeline table holding the contract of "http.post", the
// tool the fixtures name (its dot is no manifest name, so it is built here).
func postTable(t *testing.T) *registry.Registry {
	t.Helper()
	r := registry.New()
	spec := &toolreg.Spec{Name: "http.post", Description: "POST to a URL.", SideEffect: true,
		Params: []*toolreg.Param{{Name: "url", Schema: toolreg.Schema{Type: toolreg.TypeString}}}}
	if err := r.Register(toolreg.NewTool(spec)); err != nil {
		t.Fatal(err)
	}
	return r
}
