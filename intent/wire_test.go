package intent_test

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/intent"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fixtureDir holds the Python runtime's bytes, copied byte for byte into
// the repository so that a plain clone's tests read them (see its README).
const fixtureDir = "testdata/beam-agents-v1"

const (
	t0 = 1700000000000
	t1 = 1700000000500
)

// goldenKey is the README's signing key: bytes 0x00 to 0x1f, id "golden-k1".
var goldenKey = func() []byte {
	k := make([]byte, 32)
	for i := range k {
		k[i] = byte(i)
	}
	return k
}()

var goldenKeys = map[string][]byte{"golden-k1": goldenKey}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatalf("reading the beam-agents fixture: %v", err)
	}
	return b
}

// intentFixtures are the README's table of field values, one row per file.
var intentFixtures = []struct {
	file   string
	want   intent.Intent
	signed bool
}{
	{
		file: "tool_intent.bin",
		want: intent.Intent{
			ID: "11111111-2222-5333-8444-555555555555", EntityKey: []byte("entity-1"), Seq: 7, StepIndex: 2,
			ToolName: "http.post", ArgsJSON: json.RawMessage(`{"body":{"n":1},"url":"https://example.test"}`),
			CreatedAtMs: t0, ExpiresAtMs: t0 + 60000, Attempt: 1,
		},
	},
	{
		file: "tool_intent_approval.bin",
		want: intent.Intent{
			ID: "aaaaaaaa-bbbb-5ccc-8ddd-eeeeeeeeeeee", EntityKey: []byte("entity-1"), Seq: 7, StepIndex: 3,
			ToolName: "approval", ArgsJSON: json.RawMessage(`{"amount":9000,"reason":"refund"}`),
			CreatedAtMs: t0, ExpiresAtMs: t0 + 3600000, Kind: intent.KindApproval,
		},
	},
	{
		file: "tool_intent_traced.bin",
		want: intent.Intent{
			ID: "cccccccc-dddd-5eee-8fff-000000000000", EntityKey: []byte("entity-1"), Seq: 7, StepIndex: 4,
			ToolName: "http.post", ArgsJSON: json.RawMessage(`{"url":"https://example.test"}`),
			CreatedAtMs: t0, ExpiresAtMs: t0 + 60000, Kind: intent.KindTool,
			TraceID: []byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef},
		},
	},
	{
		file: "tool_intent_signed.bin",
		want: intent.Intent{
			ID: "dddddddd-eeee-5fff-8000-111111111111", EntityKey: []byte("entity-1"), Seq: 7, StepIndex: 5,
			ToolName: "http.post", ArgsJSON: json.RawMessage(`{"url":"https://example.test"}`),
			CreatedAtMs: t0, ExpiresAtMs: t0 + 60000, Kind: intent.KindTool,
			SignatureScheme: intent.SchemeHMACSHA256, SigningKeyID: "golden-k1",
		},
		signed: true,
	},
	{
		file: "tool_intent_future_field.bin",
		want: intent.Intent{
			ID: "eeeeeeee-ffff-5000-8111-222222222222", EntityKey: []byte("entity-1"), Seq: 7, StepIndex: 6,
			ToolName: "http.post", ArgsJSON: json.RawMessage(`{"url":"https://example.test"}`),
			CreatedAtMs: t0, ExpiresAtMs: t0 + 60000, Kind: intent.KindTool,
			SignatureScheme: intent.SchemeHMACSHA256, SigningKeyID: "golden-k1",
		},
		signed: true,
	},
}

var wantResult = intent.Result{
	IntentID: "11111111-2222-5333-8444-555555555555", EntityKey: []byte("entity-1"), Seq: 7,
	Status: intent.StatusOK, Payload: []byte("\x00\x01\x02result"), CompletedAtMs: t1,
}

// The signature bytes are the MAC and cannot be written in the README's table;
// the fixtures are checked field by field without them, and the signature is
// checked by verifying it.
var ignoreSignature = cmpopts.IgnoreFields(intent.Intent{}, "Signature")

func decodeIntent(t testing.TB, b []byte) *intent.Intent {
	t.Helper()
	var in intent.Intent
	if err := in.UnmarshalBinary(b); err != nil {
		t.Fatalf("UnmarshalBinary: %v", err)
	}
	return &in
}

func TestEveryFixtureDecodesToItsDocumentedFieldValues(t *testing.T) {
	t.Parallel()
	for _, fx := range intentFixtures {
		t.Run(fx.file, func(t *testing.T) {
			t.Parallel()
			got := decodeIntent(t, readFixture(t, fx.file))
			if diff := cmp.Diff(fx.want, *got, ignoreSignature, cmpopts.IgnoreUnexported(intent.Intent{})); diff != "" {
				t.Errorf("decoded intent (-want +got):\n%s", diff)
			}
			if fx.signed != (len(got.Signature) == 32) {
				t.Errorf("signature is %d bytes; want 32 when signed, none otherwise", len(got.Signature))
			}
		})
	}
	t.Run("tool_result.bin", func(t *testing.T) {
		t.Parallel()
		var got intent.Result
		if err := got.UnmarshalBinary(readFixture(t, "tool_result.bin")); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantResult, got, cmpopts.IgnoreUnexported(intent.Result{})); diff != "" {
			t.Errorf("decoded result (-want +got):\n%s", diff)
		}
	})
}

func TestEveryFixtureReencodesByteIdentically(t *testing.T) {
	t.Parallel()
	for _, fx := range intentFixtures {
		t.Run(fx.file, func(t *testing.T) {
			t.Parallel()
			raw := readFixture(t, fx.file)
			got, err := decodeIntent(t, raw).MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, raw) {
				t.Errorf("re-encoded bytes differ from the fixture:\n got %x\nwant %x", got, raw)
			}
		})
	}
	t.Run("tool_result.bin", func(t *testing.T) {
		t.Parallel()
		raw := readFixture(t, "tool_result.bin")
		var r intent.Result
		if err := r.UnmarshalBinary(raw); err != nil {
			t.Fatal(err)
		}
		got, err := r.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, raw) {
			t.Errorf("re-encoded bytes differ from the fixture:\n got %x\nwant %x", got, raw)
		}
	})
}

// Encoding the documented values from scratch, and signing with the golden
// key, must give Python's bytes: this checks the encoder and the signer
// against the other runtime, not only against our own decoder.
func TestIntentsBuiltFromDocumentedValuesEncodeToThePythonBytes(t *testing.T) {
	t.Parallel()
	for _, fx := range intentFixtures {
		if fx.file == "tool_intent_future_field.bin" {
			continue // its unknown field cannot be built from outside the wire
		}
		t.Run(fx.file, func(t *testing.T) {
			t.Parallel()
			in := fx.want
			if fx.signed {
				if err := in.SignHMAC("golden-k1", goldenKey); err != nil {
					t.Fatal(err)
				}
			}
			got, err := in.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if want := readFixture(t, fx.file); !bytes.Equal(got, want) {
				t.Errorf("encoded bytes differ from Python's:\n got %x\nwant %x", got, want)
			}
		})
	}
	t.Run("tool_result.bin", func(t *testing.T) {
		t.Parallel()
		r := wantResult
		got, err := r.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if want := readFixture(t, "tool_result.bin"); !bytes.Equal(got, want) {
			t.Errorf("encoded bytes differ from Python's:\n got %x\nwant %x", got, want)
		}
	})
}

func TestTheSignedFixtureVerifiesWithTheGoldenKey(t *testing.T) {
	t.Parallel()
	in := decodeIntent(t, readFixture(t, "tool_intent_signed.bin"))
	if err := in.VerifyHMAC(goldenKeys); err != nil {
		t.Fatalf("VerifyHMAC: %v", err)
	}
}

func TestTheFutureFieldFixtureVerifiesOnlyWhileItsUnknownFieldIsKept(t *testing.T) {
	t.Parallel()
	raw := readFixture(t, "tool_intent_future_field.bin")
	in := decodeIntent(t, raw)
	if err := in.VerifyHMAC(goldenKeys); err != nil {
		t.Fatalf("with field 500 kept: VerifyHMAC: %v", err)
	}

	// The unknown field is written back after the known ones.
	b, _ := in.MarshalBinary()
	if want := protowire.AppendVarint(protowire.AppendTag(nil, 500, protowire.VarintType), 42); !bytes.HasSuffix(b, want) {
		t.Errorf("re-encoded intent ends %x; want the unknown field 500=42 (%x) last", b[len(b)-3:], want)
	}

	// A reader that drops unknown fields keeps only the known ones: copying them
	// into a fresh Intent is exactly that.
	dropped := intent.Intent{
		ID: in.ID, EntityKey: in.EntityKey, Seq: in.Seq, StepIndex: in.StepIndex, ToolName: in.ToolName,
		ArgsJSON: in.ArgsJSON, CreatedAtMs: in.CreatedAtMs, ExpiresAtMs: in.ExpiresAtMs, Attempt: in.Attempt,
		Kind: in.Kind, TraceID: in.TraceID, SignatureScheme: in.SignatureScheme,
		SigningKeyID: in.SigningKeyID, Signature: in.Signature,
	}
	err := dropped.VerifyHMAC(goldenKeys)
	if !errors.Is(err, intent.ErrBadSignature) {
		t.Fatalf("with field 500 dropped: VerifyHMAC = %v; want ErrBadSignature", err)
	}

	// The JSON form keeps the unknown field too.
	j, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var back intent.Intent
	if err := json.Unmarshal(j, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.VerifyHMAC(goldenKeys); err != nil {
		t.Errorf("after a trip through JSON: VerifyHMAC: %v", err)
	}
}

func TestVerificationRefusesEachFailureWithItsOwnError(t *testing.T) {
	t.Parallel()
	signed := func(t *testing.T) *intent.Intent {
		return decodeIntent(t, readFixture(t, "tool_intent_signed.bin"))
	}
	tests := []struct {
		name   string
		intent func(t *testing.T) *intent.Intent
		keys   map[string][]byte
		want   error
	}{
		{"an intent with no signature is unsigned", func(t *testing.T) *intent.Intent {
			return decodeIntent(t, readFixture(t, "tool_intent.bin"))
		}, goldenKeys, intent.ErrUnsigned},
		{"a key id the verifier does not hold is an unknown key", signed,
			map[string][]byte{"other-k2": goldenKey}, intent.ErrUnknownKey},
		{"an empty key counts as absent", signed,
			map[string][]byte{"golden-k1": {}}, intent.ErrUnknownKey},
		{"another key under the same id is a bad signature", signed,
			map[string][]byte{"golden-k1": []byte("not the golden key")}, intent.ErrBadSignature},
		{"changed arguments are a bad signature", func(t *testing.T) *intent.Intent {
			in := signed(t)
			in.ArgsJSON = json.RawMessage(`{"url":"https://evil.test"}`)
			return in
		}, goldenKeys, intent.ErrBadSignature},
		{"a changed expiry is a bad signature", func(t *testing.T) *intent.Intent {
			in := signed(t)
			in.ExpiresAtMs++
			return in
		}, goldenKeys, intent.ErrBadSignature},
		{"a changed key id is checked under that id", func(t *testing.T) *intent.Intent {
			in := signed(t)
			in.SigningKeyID = "golden-k2"
			return in
		}, map[string][]byte{"golden-k1": goldenKey, "golden-k2": goldenKey[1:]}, intent.ErrBadSignature},
		{"an unsupported scheme is a bad signature", func(t *testing.T) *intent.Intent {
			in := signed(t)
			in.SignatureScheme = 7
			return in
		}, goldenKeys, intent.ErrBadSignature},
		{"a signature without a scheme is a bad signature", func(t *testing.T) *intent.Intent {
			in := signed(t)
			in.SignatureScheme = intent.SchemeUnspecified
			return in
		}, goldenKeys, intent.ErrBadSignature},
		{"a truncated signature is a bad signature", func(t *testing.T) *intent.Intent {
			in := signed(t)
			in.Signature = in.Signature[:31]
			return in
		}, goldenKeys, intent.ErrBadSignature},
	}
	sentinels := []error{intent.ErrUnsigned, intent.ErrUnknownKey, intent.ErrBadSignature}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.intent(t).VerifyHMAC(tt.keys)
			var se *intent.SignatureError
			if !errors.As(err, &se) {
				t.Fatalf("VerifyHMAC = %v; want a *SignatureError", err)
			}
			for _, s := range sentinels {
				if got := errors.Is(err, s); got != (s == tt.want) {
					t.Errorf("errors.Is(err, %q) = %v; err = %v", s, got, err)
				}
			}
			if !errors.Is(err, toolreg.ErrTool) {
				t.Errorf("errors.Is(err, ErrTool) = false")
			}
			if !strings.Contains(err.Error(), "dddddddd-") && !strings.Contains(err.Error(), "11111111-") {
				t.Errorf("error %q does not name the intent", err)
			}
		})
	}
}

func TestSigningThenChangingNothingVerifiesAndSigningIsDeterministic(t *testing.T) {
	t.Parallel()
	in := intentFixtures[0].want
	if err := in.SignHMAC("k", []byte("secret")); err != nil {
		t.Fatal(err)
	}
	if err := in.VerifyHMAC(map[string][]byte{"k": []byte("secret")}); err != nil {
		t.Fatalf("VerifyHMAC after SignHMAC: %v", err)
	}
	first, _ := in.MarshalBinary()
	if err := in.SignHMAC("k", []byte("secret")); err != nil { // re-signing a signed intent
		t.Fatal(err)
	}
	second, _ := in.MarshalBinary()
	if !bytes.Equal(first, second) {
		t.Errorf("signing twice gave different bytes:\n%x\n%x", first, second)
	}
	if err := in.SignHMAC("k", nil); err == nil {
		t.Errorf("SignHMAC with an empty key succeeded; want an error")
	}
}

func TestIntentIDsMatchThePythonRuntime(t *testing.T) {
	t.Parallel()
	// Expected ids computed with Python's uuid.uuid5 (see the fixtures' README):
	// python3 -c 'import uuid; print(uuid.uuid5(uuid.UUID("6f3e9d2a-1c47-5b8e-9a10-2d4f6b8c0e11"), NAME))'
	tests := []struct {
		name      string
		entityKey []byte
		seq       int64
		step      uint32
		want      string
	}{
		{"the README's example", []byte("entity-1"), 7, 2, "ae132720-ef00-5246-b526-5b18bec03dd0"},
		{"the next step", []byte("entity-1"), 7, 3, "c0aa1d04-4e9e-5c02-bb3d-b6c4009e712e"},
		{"an empty key at the origin", nil, 0, 0, "30db89a2-7585-5735-849e-0be871f4c11d"},
		{"a binary key, a negative seq and the largest step", []byte{0x00, 0xff}, -1, 4294967295, "22b330e5-95f1-5f71-b51b-d5dfe0c458b6"},
		{"a large seq", []byte("cust-42"), 123456789012, 17, "02bb784a-53e6-52e2-93b6-d677441dbd39"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := intent.IntentID(tt.entityKey, tt.seq, tt.step); got != tt.want {
				t.Errorf("IntentID(%x, %d, %d) = %s; want %s", tt.entityKey, tt.seq, tt.step, got, tt.want)
			}
		})
	}
}

// The JSON form of each fixture is a golden file; reading it back gives the
// fixture's bytes.
func TestEveryFixtureRoundTripsThroughItsGoldenJSON(t *testing.T) {
	t.Parallel()
	files := []string{"tool_result.bin"}
	for _, fx := range intentFixtures {
		files = append(files, fx.file)
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			raw := readFixture(t, file)
			var v wireMessage
			if strings.HasPrefix(file, "tool_result") {
				v = new(intent.Result)
			} else {
				v = new(intent.Intent)
			}
			if err := v.UnmarshalBinary(raw); err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", "wire", strings.TrimSuffix(file, ".bin")+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("JSON form (-want +got):\n%s", diff)
			}
			if err := json.Unmarshal(want, v); err != nil {
				t.Fatal(err)
			}
			back, err := v.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, raw) {
				t.Errorf("golden JSON read back to other bytes:\n got %x\nwant %x", back, raw)
			}
		})
	}
}

// Every enum value reads back from the text it writes: its wire name, or its
// number when this version has no name for it.
func TestEnumsReadBackTheirWireNames(t *testing.T) {
	t.Parallel()
	type enum interface {
		encoding.TextMarshaler
		encoding.TextUnmarshaler
	}
	tests := []struct {
		name       string
		new        func(int32) enum
		wire, last int32 // values 0..last have names; wire has none
	}{
		{"kind", func(i int32) enum { k := intent.IntentKind(i); return &k }, 7, 2},
		{"signature scheme", func(i int32) enum { s := intent.SignatureScheme(i); return &s }, 7, 1},
		{"status", func(i int32) enum { s := intent.Status(i); return &s }, 7, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for i := int32(0); i <= tt.last+1; i++ {
				v := i
				if i > tt.last {
					v = tt.wire
				}
				text, _ := tt.new(v).MarshalText()
				if named := v <= tt.last; named == (string(text) == fmt.Sprint(v)) {
					t.Errorf("value %d is written %q; want a name for 0 to %d, the number otherwise", v, text, tt.last)
				}
				back := tt.new(-1)
				if err := back.UnmarshalText(text); err != nil {
					t.Fatalf("reading %q: %v", text, err)
				}
				if again, _ := back.MarshalText(); string(again) != string(text) {
					t.Errorf("%q reads back as %q", text, again)
				}
			}
		})
	}
}

// wireMessage is what Intent and Result both are.
type wireMessage interface {
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

func TestJSONIsRefusedWithAClearError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		json string
		want string
	}{
		{"an unknown key", `{"intent_id":"x","tool":"y"}`, `unknown field "tool"`},
		{"an unknown kind name", `{"kind":"EXECUTE"}`, `unknown kind "EXECUTE": want one of "TOOL_KIND_UNSPECIFIED", "TOOL", "APPROVAL", or a number`},
		{"an unknown scheme name", `{"signature_scheme":"HMAC_SHA512"}`, `unknown signature scheme "HMAC_SHA512": want one of "SIGNATURE_SCHEME_UNSPECIFIED", "HMAC_SHA256", or a number`},
		{"bytes that are not base64", `{"trace_id":"not base64!"}`, `trace_id: got "not base64!", want a string of standard base64`},
		{"a long payload that is not base64", `{"signature":"` + strings.Repeat("é", 30) + `"}`, `signature: got "éééééééééééééééééé..., want`},
		{"unknown_fields that are not protobuf", `{"unknown_fields":"/w=="}`, "unknown_fields"},
		{"trailing data", `{"seq":1} {}`, "after the object"},
		{"a seq that is not an integer", `{"seq":1.5}`, "seq: got 1.5, want a 64-bit integer"},
		{"a negative step", `{"step_index":"-1"}`, `step_index: got "-1", want an unsigned 32-bit integer`},
		{"a number for a string", `{"intent_id":5}`, "intent_id: got number, want a string"},
		{"a number for bytes", `{"entity_key":5}`, "entity_key: got 5, want a string of standard base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var in intent.Intent
			err := in.UnmarshalJSON([]byte(tt.json))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("UnmarshalJSON(%s) = %v; want an error containing %q", tt.json, err, tt.want)
			}
		})
	}
}

func TestBadBytesAreRefusedWithAWireErrorSayingWhere(t *testing.T) {
	t.Parallel()
	valid := readFixture(t, "tool_intent.bin")
	tests := []struct {
		name  string
		bytes []byte
		want  string
	}{
		{"a truncated message", valid[:len(valid)-1], "ToolIntent.attempt at byte 124"},
		{"a length past the end", []byte{0x0a, 0x05, 'a'}, "ToolIntent.intent_id at byte 0"},
		{"a tool name that is not UTF-8", []byte{0x2a, 0x02, 0xff, 0xfe}, "ToolIntent.tool_name at byte 0: string field is not valid UTF-8"},
		{"field number zero", []byte{0x00, 0x01}, "ToolIntent at byte 0"},
		{"an end-group with no start", []byte{0x0c}, "ToolIntent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := intent.Intent{ToolName: "kept"}
			err := in.UnmarshalBinary(tt.bytes)
			var we *intent.WireError
			if !errors.As(err, &we) {
				t.Fatalf("UnmarshalBinary = %v; want a *WireError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if in.ToolName != "kept" {
				t.Errorf("a failed decode changed the intent: tool name %q", in.ToolName)
			}
		})
	}
	t.Run("encoding a string that is not UTF-8", func(t *testing.T) {
		t.Parallel()
		in := intent.Intent{ToolName: "\xff"}
		_, err := in.MarshalBinary()
		var we *intent.WireError
		if !errors.As(err, &we) || we.Field != "tool_name" {
			t.Fatalf("MarshalBinary = %v; want a *WireError on tool_name", err)
		}
	})
}

func TestTheDecoderFollowsProto3Rules(t *testing.T) {
	t.Parallel()
	var b []byte
	b = protowire.AppendTag(b, 5, protowire.BytesType)
	b = protowire.AppendString(b, "first")
	b = protowire.AppendTag(b, 3, protowire.BytesType) // seq with the wrong wire type: kept as unknown
	b = protowire.AppendString(b, "x")
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, 9)
	b = protowire.AppendTag(b, 5, protowire.BytesType) // the last value wins
	b = protowire.AppendString(b, "second")
	var in intent.Intent
	if err := in.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if in.ToolName != "second" || in.Seq != 9 {
		t.Errorf("tool name %q seq %d; want the last tool name, \"second\", and seq 9", in.ToolName, in.Seq)
	}
	got, _ := in.MarshalBinary()
	var want []byte
	want = protowire.AppendTag(want, 3, protowire.VarintType)
	want = protowire.AppendVarint(want, 9)
	want = protowire.AppendTag(want, 5, protowire.BytesType)
	want = protowire.AppendString(want, "second")
	want = protowire.AppendTag(want, 3, protowire.BytesType)
	want = protowire.AppendString(want, "x")
	if !bytes.Equal(got, want) {
		t.Errorf("re-encoded %x; want known fields in order, then the unknown one: %x", got, want)
	}
	assertSameAsProtobufGo(t, intentDesc, b)
}

// Differential check against protobuf-go: a dynamic message built from the
// README's field table, plus toolreg's extension fields, must accept exactly
// what UnmarshalBinary accepts, and its deterministic serialization must be
// our bytes. contractIntentDesc is the table alone, as the Python runtime
// knows the message: it keeps toolreg's fields as unknown ones.

var (
	intentDesc, resultDesc = wireDescriptors(true)
	contractIntentDesc, _  = wireDescriptors(false)
)

func wireDescriptors(extensions bool) (protoreflect.MessageDescriptor, protoreflect.MessageDescriptor) {
	field := func(name string, num int32, typ descriptorpb.FieldDescriptorProto_Type, enum string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{
			Name: proto.String(name), Number: proto.Int32(num), Type: typ.Enum(),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
		}
		if enum != "" {
			f.TypeName = proto.String(".beam.v1." + enum)
		}
		return f
	}
	const (
		str  = descriptorpb.FieldDescriptorProto_TYPE_STRING
		byt  = descriptorpb.FieldDescriptorProto_TYPE_BYTES
		i64  = descriptorpb.FieldDescriptorProto_TYPE_INT64
		u32  = descriptorpb.FieldDescriptorProto_TYPE_UINT32
		enum = descriptorpb.FieldDescriptorProto_TYPE_ENUM
	)
	enumType := func(name string, values ...string) *descriptorpb.EnumDescriptorProto {
		e := &descriptorpb.EnumDescriptorProto{Name: proto.String(name)}
		for i, v := range values {
			e.Value = append(e.Value, &descriptorpb.EnumValueDescriptorProto{Name: proto.String(v), Number: proto.Int32(int32(i))})
		}
		return e
	}
	fd := &descriptorpb.FileDescriptorProto{
		Name: proto.String("beam_v1_test.proto"), Package: proto.String("beam.v1"), Syntax: proto.String("proto3"),
		EnumType: []*descriptorpb.EnumDescriptorProto{
			enumType("Kind", "TOOL_KIND_UNSPECIFIED", "TOOL", "APPROVAL"),
			enumType("SignatureScheme", "SIGNATURE_SCHEME_UNSPECIFIED", "HMAC_SHA256"),
			enumType("Status", "STATUS_UNSPECIFIED", "OK", "ERROR", "EXPIRED", "REJECTED"),
		},
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("ToolIntent"), Field: []*descriptorpb.FieldDescriptorProto{
				field("intent_id", 1, str, ""), field("entity_key", 2, byt, ""), field("seq", 3, i64, ""),
				field("step_index", 4, u32, ""), field("tool_name", 5, str, ""), field("args_json", 6, str, ""),
				field("created_at_ms", 7, i64, ""), field("expires_at_ms", 8, i64, ""), field("attempt", 9, u32, ""),
				field("kind", 10, enum, "Kind"), field("trace_id", 11, byt, ""),
				field("signature_scheme", 12, enum, "SignatureScheme"), field("signing_key_id", 13, str, ""),
				field("signature", 14, byt, ""),
			}},
			{Name: proto.String("ToolResult"), Field: []*descriptorpb.FieldDescriptorProto{
				field("intent_id", 1, str, ""), field("entity_key", 2, byt, ""), field("seq", 3, i64, ""),
				field("status", 4, enum, "Status"), field("payload", 5, byt, ""), field("error_message", 6, str, ""),
				field("completed_at_ms", 7, i64, ""),
			}},
		},
	}
	if extensions {
		fd.MessageType[0].Field = append(fd.MessageType[0].Field, field("tool_call_id", 1000, str, ""))
		fd.MessageType = append(fd.MessageType, &descriptorpb.DescriptorProto{Name: proto.String("Principal"), Field: []*descriptorpb.FieldDescriptorProto{
			field("subject", 1, str, ""),
			{Name: proto.String("scopes"), Number: proto.Int32(2), Type: str.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()},
		}})
		fd.MessageType[0].Field = append(fd.MessageType[0].Field, &descriptorpb.FieldDescriptorProto{
			Name: proto.String("principal"), Number: proto.Int32(1001), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(),
			TypeName: proto.String(".beam.v1.Principal"), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
		})
	}
	f, err := protodesc.NewFile(fd, nil)
	if err != nil {
		panic(err)
	}
	return f.Messages().ByName("ToolIntent"), f.Messages().ByName("ToolResult")
}

// principalNotReadAsWritten reports whether protobuf-go, reading b into m
// (a ToolIntent with the principal field), had to do what toolreg refuses
// to: keep an unknown field inside the principal, or merge two principals.
func principalNotReadAsWritten(m *dynamicpb.Message, b []byte) bool {
	f := m.Descriptor().Fields().ByNumber(1001)
	if f == nil || !m.Has(f) {
		return false
	}
	if len(m.Get(f).Message().GetUnknown()) > 0 {
		return true
	}
	n := 0
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return false
		}
		v := protowire.ConsumeFieldValue(num, typ, b[l:])
		if v < 0 {
			return false
		}
		if num == 1001 && typ == protowire.BytesType {
			n++
		}
		b = b[l+v:]
	}
	return n > 1
}

// assertSameAsProtobufGo decodes b with protobuf-go and with toolreg, and
// checks that both accept or both refuse it, and that both re-encode it to the
// same bytes.
func assertSameAsProtobufGo(t testing.TB, desc protoreflect.MessageDescriptor, b []byte) {
	t.Helper()
	m := dynamicpb.NewMessage(desc)
	perr := proto.Unmarshal(b, m)
	var v wireMessage
	if desc == intentDesc {
		v = new(intent.Intent)
	} else {
		v = new(intent.Result)
	}
	err := v.UnmarshalBinary(b)
	if perr == nil && desc == intentDesc && principalNotReadAsWritten(m, b) {
		// toolreg's one departure from protobuf: a principal is read only
		// as it was written, or the intent is refused.
		var we *intent.WireError
		if !errors.As(err, &we) || we.Field != "principal" {
			t.Fatalf("%x: a principal with unknown fields, or two of them: toolreg says %v, want a *WireError on principal", b, err)
		}
		return
	}
	if (perr == nil) != (err == nil) {
		t.Fatalf("%x: protobuf-go says %v; toolreg says %v", b, perr, err)
	}
	if err != nil {
		return
	}
	want, perr := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if perr != nil {
		t.Fatalf("protobuf-go re-encoding %x: %v", b, perr)
	}
	got, err := v.MarshalBinary()
	if err != nil {
		t.Fatalf("re-encoding %x: %v", b, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%x re-encodes to\n%x; protobuf-go gives\n%x", b, got, want)
	}
}

func TestEveryFixtureDecodesAndEncodesAsProtobufGoDoes(t *testing.T) {
	t.Parallel()
	for _, fx := range intentFixtures {
		assertSameAsProtobufGo(t, intentDesc, readFixture(t, fx.file))
	}
	assertSameAsProtobufGo(t, resultDesc, readFixture(t, "tool_result.bin"))
}

// The JSON form is protojson's, with proto field names: each reads the other's.
func TestJSONInteroperatesWithProtojson(t *testing.T) {
	t.Parallel()
	files := []struct {
		name string
		desc protoreflect.MessageDescriptor
	}{{"tool_result.bin", resultDesc}}
	for _, fx := range intentFixtures {
		if fx.file != "tool_intent_future_field.bin" { // protojson has no place for unknown fields
			files = append(files, struct {
				name string
				desc protoreflect.MessageDescriptor
			}{fx.file, intentDesc})
		}
	}
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			raw := readFixture(t, f.name)
			newMsg := func() wireMessage {
				if f.desc == resultDesc {
					return new(intent.Result)
				}
				return new(intent.Intent)
			}

			// protojson -> toolreg
			m := dynamicpb.NewMessage(f.desc)
			if err := proto.Unmarshal(raw, m); err != nil {
				t.Fatal(err)
			}
			pj, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			v := newMsg()
			if err := json.Unmarshal(pj, v); err != nil {
				t.Fatalf("reading protojson %s: %v", pj, err)
			}
			if got, _ := v.MarshalBinary(); !bytes.Equal(got, raw) {
				t.Errorf("protojson %s read to\n%x; want\n%x", pj, got, raw)
			}

			// toolreg -> protojson
			ours, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			back := dynamicpb.NewMessage(f.desc)
			if err := protojson.Unmarshal(ours, back); err != nil {
				t.Fatalf("protojson reading %s: %v", ours, err)
			}
			if got, _ := (proto.MarshalOptions{Deterministic: true}).Marshal(back); !bytes.Equal(got, raw) {
				t.Errorf("protojson read our %s to\n%x; want\n%x", ours, got, raw)
			}
		})
	}
}

func TestIsIntentIDAcceptsOnlyTheIDOfItsPosition(t *testing.T) {
	key := []byte("entity-1")
	id := intent.IntentID(key, 7, 2)
	if !intent.IsIntentID(id, key, 7, 2) {
		t.Errorf("intent.IsIntentID(IntentID(k, 7, 2), k, 7, 2) = false")
	}
	for _, c := range []struct {
		id        string
		key       []byte
		seq       int64
		step      uint32
		different string
	}{
		{id, key, 7, 3, "step"}, {id, key, 8, 2, "seq"}, {id, []byte("entity-2"), 7, 2, "entity key"},
		{strings.ToUpper(id), key, 7, 2, "case"}, {id + " ", key, 7, 2, "trailing byte"}, {"", key, 7, 2, "empty id"},
	} {
		if intent.IsIntentID(c.id, c.key, c.seq, c.step) {
			t.Errorf("IsIntentID with a different %s = true", c.different)
		}
	}
	if n := testing.AllocsPerRun(100, func() { intent.IsIntentID(id, key, 7, 2) }); n != 0 {
		t.Errorf("IsIntentID allocates %v times, want 0", n)
	}
}

// TestApprovalDerivedIDs: an approval's execution, decision and
// publication ids are the UUIDv5, in the intent namespace, of
// "approval|<id>|execution", "approval|<id>|decision" and
// "approval|<id>|publication", as Python's uuid module computes them
// (python3 -c 'import uuid; print(uuid.uuid5(uuid.UUID("6f3e9d2a-1c47-5b8e-9a10-2d4f6b8c0e11"), NAME))'),
// and differ from each other and from the approval's.
func TestApprovalDerivedIDs(t *testing.T) {
	t.Parallel()
	const approval = "aaaaaaaa-bbbb-5ccc-8ddd-eeeeeeeeeeee"
	if got, want := intent.ExecutionID(approval), "4e1fa246-582e-514d-82c6-c134eeeb2fc6"; got != want {
		t.Errorf("ExecutionID = %s, want %s", got, want)
	}
	if got, want := intent.DecisionID(approval), "e5b97d6f-2d53-5801-bc5c-e900a4af7df8"; got != want {
		t.Errorf("DecisionID = %s, want %s", got, want)
	}
	if got, want := intent.PublicationID(approval), "f01f1e2d-6e48-5f62-9e06-0597a98028ed"; got != want {
		t.Errorf("PublicationID = %s, want %s", got, want)
	}
}
