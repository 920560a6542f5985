package intent_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/beam-agents/toolreg/intent"
)

// toolCallIDField is field 1000 = s, as a proto3 string field is written.
func toolCallIDField(s string) []byte {
	return protowire.AppendString(protowire.AppendTag(nil, 1000, protowire.BytesType), s)
}

// signedWithCallID is the future-field fixture (which carries the unknown
// field 500) with a tool call id, signed again with the golden key.
func signedWithCallID(t *testing.T, id string) (*intent.Intent, []byte) {
	t.Helper()
	in := decodeIntent(t, readFixture(t, "tool_intent_future_field.bin"))
	in.ToolCallID = id
	if err := in.SignHMAC("golden-k1", goldenKey); err != nil {
		t.Fatal(err)
	}
	b, err := in.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return in, b
}

// TestToolCallIDIsExtensionField1000 pins the bytes: tool_call_id is a
// string field numbered 1000, written after the contract's fields 1 to 14
// and before the unknown fields, as a reader that knows it as an unknown
// field writes it back; an empty one is left out.
func TestToolCallIDIsExtensionField1000(t *testing.T) {
	t.Parallel()
	plain := readFixture(t, "tool_intent.bin")
	in := decodeIntent(t, plain)
	if in.ToolCallID != "" {
		t.Fatalf("the Python runtime's fixture reads a tool call id %q", in.ToolCallID)
	}
	in.ToolCallID = "call_mszuSIzqtI65i1wAUOE8w5H4"
	got, err := in.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if want := append(bytes.Clone(plain), toolCallIDField(in.ToolCallID)...); !bytes.Equal(got, want) {
		t.Fatalf("with a tool call id: %x\nwant the fixture then field 1000: %x", got, want)
	}
	back := decodeIntent(t, got)
	if back.ToolCallID != in.ToolCallID {
		t.Errorf("read back tool call id %q, want %q", back.ToolCallID, in.ToolCallID)
	}
	if b, _ := back.MarshalBinary(); !bytes.Equal(b, got) {
		t.Errorf("re-encoded %x, want %x", b, got)
	}

	_, signed := signedWithCallID(t, "toolu_01A")
	at := bytes.Index(signed, toolCallIDField("toolu_01A"))
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 500, protowire.VarintType), 42)
	if at < 0 || !bytes.HasSuffix(signed, unknown) || at+len(toolCallIDField("toolu_01A"))+len(unknown) != len(signed) {
		t.Errorf("signed intent %x: want field 1000 after the signature and before the unknown field 500", signed)
	}

	for _, bad := range []intent.Intent{{ToolCallID: "\xff"}} {
		var we *intent.WireError
		if _, err := bad.MarshalBinary(); !errors.As(err, &we) || we.Field != "tool_call_id" {
			t.Errorf("MarshalBinary of a tool call id that is not UTF-8 = %v; want a *WireError on tool_call_id", err)
		}
	}
	var in2 intent.Intent
	err = in2.UnmarshalBinary(append(bytes.Clone(plain), toolCallIDField("\xc3\x28")...))
	var we *intent.WireError
	if !errors.As(err, &we) || we.Field != "tool_call_id" {
		t.Errorf("decoding a tool call id that is not UTF-8 = %v; want a *WireError on tool_call_id", err)
	}
}

// TestAContractOnlyReaderKeepsTheToolCallIDAndTheSignature: a reader that
// knows only the beam-agents v1 contract (the Python runtime; here
// protobuf-go with the contract's fields 1 to 14) keeps field 1000 as an
// unknown field and writes back the very bytes, so the signature, which
// covers the tool call id, still verifies; a tool call id changed after
// signing, or dropped, does not.
func TestAContractOnlyReaderKeepsTheToolCallIDAndTheSignature(t *testing.T) {
	t.Parallel()
	in, b := signedWithCallID(t, "call_42")
	m := dynamicpb.NewMessage(contractIntentDesc)
	if err := proto.Unmarshal(b, m); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(m.GetUnknown(), toolCallIDField("call_42")) {
		t.Fatalf("the contract-only reader's unknown fields %x do not hold field 1000", m.GetUnknown())
	}
	again, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, b) {
		t.Fatalf("the contract-only reader writes back\n%x\nwant\n%x", again, b)
	}
	back := decodeIntent(t, again)
	if err := back.VerifyHMAC(goldenKeys); err != nil || back.ToolCallID != "call_42" {
		t.Fatalf("after the contract-only reader: tool call id %q, VerifyHMAC %v; want call_42, verified", back.ToolCallID, err)
	}

	changed := *in
	changed.ToolCallID = "call_43"
	if err := changed.VerifyHMAC(goldenKeys); !errors.Is(err, intent.ErrBadSignature) {
		t.Errorf("tool call id changed after signing: VerifyHMAC = %v; want ErrBadSignature", err)
	}
	dropped := *in
	dropped.ToolCallID = ""
	if err := dropped.VerifyHMAC(goldenKeys); !errors.Is(err, intent.ErrBadSignature) {
		t.Errorf("tool call id dropped after signing: VerifyHMAC = %v; want ErrBadSignature", err)
	}
}

// TestToolCallIDInTheJSONForm: the JSON form writes tool_call_id (left out
// when empty), reads it back to the same wire bytes, and agrees with
// protojson under the extended message.
func TestToolCallIDInTheJSONForm(t *testing.T) {
	t.Parallel()
	in, b := signedWithCallID(t, "call_<&>")
	j, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(j, []byte(`,"tool_call_id":"call_\u003c\u0026\u003e","unknown_fields":`)) {
		t.Errorf("JSON form %s: want tool_call_id after the signature, before unknown_fields", j)
	}
	var back intent.Intent
	if err := json.Unmarshal(j, &back); err != nil {
		t.Fatal(err)
	}
	if got, _ := back.MarshalBinary(); !bytes.Equal(got, b) {
		t.Errorf("JSON %s reads back to\n%x; want\n%x", j, got, b)
	}
	plain, _ := json.Marshal(decodeIntent(t, readFixture(t, "tool_intent.bin")))
	if bytes.Contains(plain, []byte("tool_call_id")) {
		t.Errorf("an intent without a tool call id writes %s", plain)
	}

	// protojson, with proto field names, reads and writes the same form
	// (of an intent with no unknown field, which protojson cannot hold).
	x := decodeIntent(t, readFixture(t, "tool_intent_traced.bin"))
	x.ToolCallID = "call_9"
	raw, _ := x.MarshalBinary()
	m := dynamicpb.NewMessage(intentDesc)
	if err := proto.Unmarshal(raw, m); err != nil {
		t.Fatal(err)
	}
	pj, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var fromPJ intent.Intent
	if err := json.Unmarshal(pj, &fromPJ); err != nil || fromPJ.ToolCallID != "call_9" {
		t.Fatalf("reading protojson %s: %v, tool call id %q", pj, err, fromPJ.ToolCallID)
	}
	ours, _ := json.Marshal(x)
	if !bytes.Contains(ours, []byte(`"tool_call_id":"call_9"`)) {
		t.Errorf("JSON form %s has no tool_call_id", ours)
	}
	pm := dynamicpb.NewMessage(intentDesc)
	if err := protojson.Unmarshal(ours, pm); err != nil {
		t.Fatalf("protojson reading %s: %v", ours, err)
	}
	if got, _ := (proto.MarshalOptions{Deterministic: true}).Marshal(pm); !bytes.Equal(got, raw) {
		t.Errorf("protojson read our %s to\n%x; want\n%x", ours, got, raw)
	}
}
