package intent_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/intent"
)

// The JSON form is what durable JSONL Serve reads (one intent a line) and
// writes (one result a line): these are the lines it handles, as
// internal/effectortest.Intent makes them, unsigned and signed with a trace id.

func benchIntents(b *testing.B) map[string]intent.Intent {
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	entity := "serve-bench"
	plain := intent.Intent{
		ID:        intent.IntentID([]byte(entity), now.UnixNano(), 17),
		EntityKey: []byte(entity), Seq: now.UnixNano(), StepIndex: 17,
		ToolName: "apply", ArgsJSON: json.RawMessage(`{"key":"` + entity + `"}`),
		CreatedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(time.Hour).UnixMilli(),
		Attempt: 1, Kind: intent.KindTool,
	}
	signed := plain
	signed.TraceID = []byte("0123456789abcdef")
	signed.ArgsJSON = json.RawMessage(`{"body":{"amount":12.5,"note":"<refund> & \"thanks\""},"url":"https://example.test/v1/refunds"}`)
	if err := signed.SignHMAC("k1", []byte("bench key, 32 bytes long.......")); err != nil {
		b.Fatal(err)
	}
	return map[string]intent.Intent{"plain": plain, "signed": signed}
}

func benchResult() intent.Result {
	return intent.Result{
		IntentID: intent.IntentID([]byte("serve-bench"), 1764838800000000000, 17), EntityKey: []byte("serve-bench"),
		Seq: 1764838800000000000, Status: intent.StatusOK, Payload: []byte(`{"applied":"serve-bench"}`),
		CompletedAtMs: 1764838800123,
	}
}

func BenchmarkIntentUnmarshalJSON(b *testing.B) {
	for _, name := range []string{"plain", "signed"} {
		in := benchIntents(b)[name]
		line, err := in.MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		b.Run("line="+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			var got intent.Intent
			for b.Loop() {
				if err := got.UnmarshalJSON(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkIntentMarshalJSON(b *testing.B) {
	for _, name := range []string{"plain", "signed"} {
		in := benchIntents(b)[name]
		b.Run("line="+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := in.MarshalJSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkResultMarshalJSON(b *testing.B) {
	r := benchResult()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResultUnmarshalJSON(b *testing.B) {
	r := benchResult()
	line, err := r.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var got intent.Result
	for b.Loop() {
		if err := got.UnmarshalJSON(line); err != nil {
			b.Fatal(err)
		}
	}
}
