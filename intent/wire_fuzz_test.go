package intent_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/beam-agents/toolreg/intent"
)

// The wire decoders read bytes from queues and stores another runtime writes:
// they must never panic, must agree with protobuf-go on what is valid, and
// what they accept must re-encode stably, in binary and through JSON.

func addWireSeeds(f *testing.F, files ...string) {
	for _, file := range files {
		f.Add(readFixture(f, file))
	}
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x02, 0xc3, 0x28})                                           // a string field that is not UTF-8
	f.Add([]byte{0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}) // seq -1
	f.Add([]byte{0x1a, 0x01, 0x00, 0x18, 0x01})                                     // seq with the wrong wire type, then right
	f.Add([]byte{0xa3, 0x1f, 0x08, 0x01, 0xa4, 0x1f})                               // an unknown group 500
	f.Add([]byte{0x0d, 0x01, 0x02, 0x03, 0x04, 0x51, 1, 2, 3, 4, 5, 6, 7, 8})       // fixed32 and fixed64 fields
	f.Add([]byte{0xa0, 0x1f, 0x2a, 0xc2, 0x3e, 0x02, 'i', 'd', 0x18, 0x01})         // unknown 500, tool_call_id (1000), then seq
	f.Add([]byte{0xc2, 0x3e, 0x02, 0xc3, 0x28})                                     // a tool_call_id that is not UTF-8
	f.Add([]byte{0xc0, 0x3e, 0x07})                                                 // field 1000 as a varint: kept as unknown
	f.Add([]byte{0xca, 0x3e, 0x07, 0x0a, 0x01, 'a', 0x12, 0x02, 'o', 'k'})          // principal 1001: subject "a", scope "ok"
	f.Add([]byte{0xa0, 0x1f, 0x2a, 0xca, 0x3e, 0x00, 0xca, 0x3e, 0x00})             // an unknown field, then two empty principals
}

func FuzzIntentUnmarshalBinary(f *testing.F) {
	addWireSeeds(f, "tool_intent.bin", "tool_intent_approval.bin", "tool_intent_traced.bin",
		"tool_intent_signed.bin", "tool_intent_future_field.bin")
	f.Fuzz(func(t *testing.T, b []byte) {
		assertSameAsProtobufGo(t, intentDesc, b)
		var in intent.Intent
		if in.UnmarshalBinary(b) != nil {
			return
		}
		_ = in.VerifyHMAC(goldenKeys) // must not panic, whatever the fields hold
		once, err := in.MarshalBinary()
		if err != nil {
			t.Fatalf("re-encoding an accepted intent: %v", err)
		}
		var again intent.Intent
		if err := again.UnmarshalBinary(once); err != nil {
			t.Fatalf("decoding our own encoding %x: %v", once, err)
		}
		twice, _ := again.MarshalBinary()
		if !bytes.Equal(once, twice) {
			t.Fatalf("encoding is not stable:\n%x\n%x", once, twice)
		}
		j, err := json.Marshal(&in)
		if err != nil {
			t.Fatalf("MarshalJSON of an accepted intent: %v", err)
		}
		var fromJSON intent.Intent
		if err := json.Unmarshal(j, &fromJSON); err != nil {
			t.Fatalf("reading back %s: %v", j, err)
		}
		if back, _ := fromJSON.MarshalBinary(); !bytes.Equal(back, once) {
			t.Fatalf("JSON %s reads back to\n%x; want\n%x", j, back, once)
		}
	})
}

func FuzzResultUnmarshalBinary(f *testing.F) {
	addWireSeeds(f, "tool_result.bin")
	f.Fuzz(func(t *testing.T, b []byte) {
		assertSameAsProtobufGo(t, resultDesc, b)
		var r intent.Result
		if r.UnmarshalBinary(b) != nil {
			return
		}
		once, err := r.MarshalBinary()
		if err != nil {
			t.Fatalf("re-encoding an accepted result: %v", err)
		}
		j, err := json.Marshal(&r)
		if err != nil {
			t.Fatalf("MarshalJSON of an accepted result: %v", err)
		}
		var fromJSON intent.Result
		if err := json.Unmarshal(j, &fromJSON); err != nil {
			t.Fatalf("reading back %s: %v", j, err)
		}
		if back, _ := fromJSON.MarshalBinary(); !bytes.Equal(back, once) {
			t.Fatalf("JSON %s reads back to\n%x; want\n%x", j, back, once)
		}
	})
}

func FuzzIntentUnmarshalJSON(f *testing.F) {
	golden, _ := filepath.Glob(filepath.Join("testdata", "wire", "tool_intent*.json"))
	for _, g := range golden {
		b, err := os.ReadFile(g)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"kind":"7","seq":-1,"args_json":"\u00ff"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"unknown_fields":"oB8q","signature_scheme":"HMAC_SHA256"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var in intent.Intent
		if in.UnmarshalJSON(b) != nil {
			return
		}
		_ = in.VerifyHMAC(goldenKeys)
		wire, err := in.MarshalBinary()
		if err != nil {
			t.Fatalf("MarshalBinary of an intent read from JSON %s: %v", b, err)
		}
		j, err := json.Marshal(&in)
		if err != nil {
			t.Fatalf("MarshalJSON of an intent read from JSON %s: %v", b, err)
		}
		var again intent.Intent
		if err := json.Unmarshal(j, &again); err != nil {
			t.Fatalf("reading back %s: %v", j, err)
		}
		if back, _ := again.MarshalBinary(); !bytes.Equal(back, wire) {
			t.Fatalf("JSON round trip changed the wire bytes:\n%x\n%x", back, wire)
		}
		var fromWire intent.Intent
		if err := fromWire.UnmarshalBinary(wire); err != nil {
			t.Fatalf("decoding %x: %v", wire, err)
		}
	})
}
