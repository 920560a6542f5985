package intent

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/beam-agents/toolreg"
)

// The fast paths of wirejson_fast.go must decide exactly what the reference
// encoding/json implementation (wirejson_ref_test.go) decides: the same inputs
// accepted, to the same values, the same errors for the rest, and the same
// bytes written. These inputs probe where a hand-written scanner and
// encoding/json could part; they seed the fuzz targets too.
var trickyIntentJSON = []string{
	``, ` `, `null`, ` null `, `{}`, ` { } `, `[]`, `"x"`, `5`, `{`, `{"seq":1`, `{"seq":1,}`, `{,}`,
	`{"seq":1} {}`, `{"seq":1}x`, `{"seq":1}}`, "{\"seq\":1}\n", "\t{\"seq\":1}\r\n ", "\ufeff{}", `{"seq":1}null`,
	// keys: other case (encoding/json folds them), escapes, duplicates, unknown
	`{"SEQ":1}`, `{"Seq":1}`, `{"intent_ID":"a"}`, `{"\u0073eq":1}`, `{"seq":1,"seq":2}`, `{"seq":1,"seq":null}`,
	`{"intent_id":"a","intent_id":"b"}`, `{"kind":"TOOL","kind":null}`, `{"tool":"x"}`, `{"":1}`, "{\"s\u212aq\":1}",
	"{\"\u017fignature\":\"\"}", `{"seq" : 1 , "attempt" :2}`,
	// nulls
	`{"seq":null}`, `{"intent_id":null}`, `{"entity_key":null}`, `{"kind":null}`, `{"args_json":null}`, `{"step_index":null}`,
	// integers
	`{"seq":0}`, `{"seq":-0}`, `{"seq":01}`, `{"seq":-01}`, `{"seq":-}`, `{"seq":+1}`, `{"seq":1.0}`, `{"seq":1e3}`, `{"seq":1E3}`,
	`{"seq":"1"}`, `{"seq":"+1"}`, `{"seq":"-1"}`, `{"seq":"01"}`, `{"seq":"-0"}`, `{"seq":""}`, `{"seq":" 1"}`, `{"seq":"1 "}`,
	`{"seq":"\u0031"}`, `{"seq":"0x1"}`, `{"seq":"1_0"}`, `{"seq":true}`, `{"seq":[]}`, `{"seq":{}}`,
	`{"seq":9223372036854775807}`, `{"seq":9223372036854775808}`, `{"seq":-9223372036854775808}`, `{"seq":-9223372036854775809}`,
	`{"seq":"9223372036854775807"}`, `{"seq":"-9223372036854775808"}`, `{"seq":"09223372036854775807"}`, `{"seq":99999999999999999999}`,
	`{"seq":1796202000000000000}`, `{"seq":18446744073709551615}`, `{"seq":18446744073709551616}`,
	`{"step_index":4294967295}`, `{"step_index":4294967296}`, `{"step_index":-0}`, `{"step_index":"-0"}`, `{"step_index":"+1"}`,
	`{"step_index":"4294967295"}`, `{"attempt":"00000000000000000001"}`, `{"attempt":1.5}`,
	// strings
	`{"intent_id":""}`, `{"intent_id":"a\"b\\c\/d\b\f\n\r\t"}`, `{"intent_id":"\u00e9\u2028\uFFFF\u0000"}`,
	`{"intent_id":"\ud83d\ude00"}`, `{"intent_id":"\ud83d"}`, `{"intent_id":"\ude00x"}`, `{"intent_id":"\ud83d\u0041"}`,
	`{"intent_id":"\u12"}`, `{"intent_id":"\uzzzz"}`, `{"intent_id":"\x"}`, `{"intent_id":"\`, `{"intent_id":"a`,
	"{\"intent_id\":\"é😀\"}", "{\"intent_id\":\"\xff\"}", "{\"intent_id\":\"\xed\xa0\x80\"}", "{\"intent_id\":\"a\tb\"}",
	"{\"intent_id\":\"\x7f\"}", `{"intent_id":5}`, `{"tool_name":true}`, `{"signing_key_id":"k1"}`,
	`{"args_json":""}`, `{"args_json":"{\"a\":1}"}`, `{"args_json":"{\"a\":\"\u003cb\u003e \u0026\"}"}`, `{"args_json":{}}`,
	// bytes
	`{"entity_key":""}`, `{"entity_key":"YQ=="}`, `{"entity_key":"YR=="}`, `{"entity_key":"YQ"}`, `{"entity_key":"YQ=?"}`,
	`{"entity_key":"YQ==\n"}`, `{"entity_key":"YQ\r\n=="}`, `{"entity_key":"YQ\u003d\u003d"}`, `{"entity_key":"Y Q=="}`,
	`{"entity_key":"===="}`, `{"entity_key":"="}`, `{"entity_key":"-_-_"}`, `{"entity_key":5}`, `{"entity_key":[1]}`,
	`{"trace_id":"AAECAwQFBgcICQoLDA0ODw=="}`, `{"signature":"not base64!"}`,
	`{"unknown_fields":"oB8q"}`, `{"unknown_fields":"/w=="}`, `{"unknown_fields":""}`, `{"unknown_fields":"qAYB"}`,
	// enums
	`{"kind":"TOOL"}`, `{"kind":"APPROVAL"}`, `{"kind":"TOOL_KIND_UNSPECIFIED"}`, `{"kind":"tool"}`, `{"kind":"7"}`,
	`{"kind":"+7"}`, `{"kind":"-7"}`, `{"kind":"007"}`, `{"kind":""}`, `{"kind":"2147483647"}`, `{"kind":"2147483648"}`,
	`{"kind":"-2147483648"}`, `{"kind":"999999999"}`, `{"kind":"1000000000"}`, `{"kind":1}`, `{"kind":"T\u004fOL"}`,
	`{"kind":"EXECUTE"}`, `{"signature_scheme":"HMAC_SHA256"}`, `{"signature_scheme":"HMAC_SHA512"}`, `{"signature_scheme":"0"}`,
	`{"kind":" 1"}`, `{"kind":"1 "}`, `{"kind":"TOOL "}`,
	// tool_call_id, toolreg's extension field 1000
	`{"tool_call_id":"call_1"}`, `{"tool_call_id":""}`, `{"tool_call_id":null}`, `{"tool_call_id":5}`,
	`{"tool_call_id":"a","tool_call_id":"b"}`, `{"TOOL_CALL_ID":"x"}`, `{"tool_call_Id":"x"}`, `{"tool_call_id":"\u00e9\n<>"}`,
	`{"tool_call_id":"\ud83d"}`, "{\"tool_call_id\":\"\xff\"}", `{"toolCallId":"x"}`, `{"tool_call_id":["x"]}`,
	`{"signature":"c2ln","tool_call_id":"toolu_01","unknown_fields":"oB8q"}`,
	// principal (toolreg's extension field 1001)
	`{"principal":null}`, `{"principal":{}}`, `{"principal":{"subject":"ana"}}`, `{"principal":{"scopes":[]}}`,
	`{"principal":{"scopes":null}}`, `{"principal":{"subject":null,"scopes":["a","b"]}}`, `{"principal":{"scopes":["a",null]}}`,
	`{"principal":{"scopes":[""]}}`, `{"principal":{"scopes":[1]}}`, `{"principal":{"scopes":"a"}}`, `{"principal":[]}`,
	`{"principal":"ana"}`, `{"principal":{"subject":"a","subject":"b"}}`, `{"principal":{"Subject":"a"}}`,
	`{"principal":{"subject":"a","role":"admin"}}`, `{"principal":{"subject":"\u00e9\ud83d\ude00","scopes":["\ud83d"]}}`,
	`{"principal":{"subject":"a"},"principal":null}`, `{"principal" : { "subject" : "a" , "scopes" : [ "x" , "y" ] } }`,
	`{"principal":{"scopes":["a",]}}`, `{"principal":{"scopes":["a"}}`, `{"principal":{"subject":"a",}}`, `{"principal":{`,
	`{"principal":{"scopes":[["a"]]}}`, `{"PRINCIPAL":{}}`,
}

var trickyResultJSON = []string{
	`{}`, `null`, `{"status":"OK"}`, `{"status":"REJECTED"}`, `{"status":"9"}`, `{"status":"ok"}`, `{"status":null}`,
	`{"payload":"eyJhIjoxfQ=="}`, `{"payload":""}`, `{"payload":null}`, `{"error_message":"boom\nline 2 <x>"}`,
	`{"error_message":"\u001f"}`, `{"completed_at_ms":"1700000000000"}`, `{"completed_at_ms":1.5}`, `{"seq":1,"Seq":2}`,
	`{"unknown_fields":"oB8q"}`, `{"unknown_fields":"/w=="}`, `{"kind":"TOOL"}`, `{"intent_id":"a","status":"OK"} x`,
}

func goldenJSON(tb testing.TB, pattern string) [][]byte {
	files, err := filepath.Glob(filepath.Join("testdata", "wire", pattern))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no golden files %s: %v", pattern, err)
	}
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error()
}

// checkIntentJSON fails t unless UnmarshalJSON and MarshalJSON do with data
// what the reference does.
func checkIntentJSON(t *testing.T, data []byte) {
	t.Helper()
	data = bytes.Clone(data) // cleared below
	want, wantErr := refUnmarshalIntentJSON(data)
	got := Intent{ID: "stale", ArgsJSON: json.RawMessage(`{}`), Kind: 9, unknown: []byte{8, 1}} // all replaced
	err := got.UnmarshalJSON(data)
	if !sameError(err, wantErr) {
		t.Fatalf("UnmarshalJSON(%q) = %v; the reference says %v", data, err, wantErr)
	}
	if wantErr != nil {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("UnmarshalJSON(%q) =\n%#v; the reference reads\n%#v", data, got, want)
	}
	if len(data) > 0 && len(got.ArgsJSON) > 0 && bytes.Contains(data, got.ArgsJSON) {
		before := string(got.ArgsJSON) // must not alias data
		clear(data)
		if string(got.ArgsJSON) != before {
			t.Fatalf("UnmarshalJSON kept a reference to its input")
		}
	}
	checkIntentMarshalJSON(t, got)
}

func checkIntentMarshalJSON(t *testing.T, in Intent) {
	t.Helper()
	want, wantErr := refMarshalIntentJSON(in)
	got, err := in.MarshalJSON()
	if !sameError(err, wantErr) || !bytes.Equal(got, want) {
		t.Fatalf("MarshalJSON(%#v) =\n%s, %v; the reference writes\n%s, %v", in, got, err, want, wantErr)
	}
}

func checkResultJSON(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := refUnmarshalResultJSON(data)
	got := Result{IntentID: "stale", Payload: []byte("x"), Status: 9, unknown: []byte{8, 1}}
	err := got.UnmarshalJSON(data)
	if !sameError(err, wantErr) {
		t.Fatalf("UnmarshalJSON(%q) = %v; the reference says %v", data, err, wantErr)
	}
	if wantErr != nil {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("UnmarshalJSON(%q) =\n%#v; the reference reads\n%#v", data, got, want)
	}
	checkResultMarshalJSON(t, got)
}

func checkResultMarshalJSON(t *testing.T, r Result) {
	t.Helper()
	want, wantErr := refMarshalResultJSON(r)
	got, err := r.MarshalJSON()
	if !sameError(err, wantErr) || !bytes.Equal(got, want) {
		t.Fatalf("MarshalJSON(%#v) =\n%s, %v; the reference writes\n%s, %v", r, got, err, want, wantErr)
	}
}

func TestJSONFastPathsDecideAsEncodingJSONDoes(t *testing.T) {
	t.Parallel()
	for _, s := range trickyIntentJSON {
		checkIntentJSON(t, []byte(s))
	}
	for _, s := range trickyResultJSON {
		checkResultJSON(t, []byte(s))
	}
	for _, g := range goldenJSON(t, "tool_intent*.json") {
		checkIntentJSON(t, g)
	}
	for _, g := range goldenJSON(t, "tool_result*.json") {
		checkResultJSON(t, g)
	}
}

func TestJSONFastPathsWriteWhatEncodingJSONWrites(t *testing.T) {
	t.Parallel()
	var texts []string
	for c := range 0x80 {
		texts = append(texts, "a"+string(rune(c))+"b")
	}
	texts = append(texts, "", "\u2027\u2028\u2029\u202a", "é😀\ufffd", "\xe2\x80", "\xe2", `{"a":"<b> & \"c\""}`, "\xff")
	for _, s := range texts {
		for _, in := range []Intent{
			{ID: s},
			{ToolName: s, EntityKey: []byte{}, Kind: -3, SignatureScheme: 1},
			{ArgsJSON: json.RawMessage(s), Seq: math.MinInt64, CreatedAtMs: math.MaxInt64, StepIndex: math.MaxUint32, Attempt: 1},
			{SigningKeyID: s, SignatureScheme: 77, Signature: []byte{0}, TraceID: []byte("trace"), unknown: []byte{0xa0, 0x1f, 0x2a}},
			{ToolCallID: s, Signature: []byte{0}, unknown: []byte{0xa0, 0x1f, 0x2a}},
			{Principal: &toolreg.Principal{Subject: s, Scopes: []string{s, "", "x"}}},
			{Principal: &toolreg.Principal{}, unknown: []byte{0xa0, 0x1f, 0x2a}},
		} {
			checkIntentMarshalJSON(t, in)
		}
		for _, r := range []Result{
			{IntentID: s, Status: StatusOK, Payload: []byte(s)},
			{ErrorMessage: s, EntityKey: []byte{}, Status: -1, Seq: -1, unknown: []byte{0xa0, 0x1f, 0x2a}},
		} {
			checkResultMarshalJSON(t, r)
		}
	}
}

// The lines MarshalJSON writes (so the lines Serve reads) take the fast path:
// were they to fall back to encoding/json, nothing would fail but Serve
// would be 5-10x slower at decoding.
func TestJSONFastPathReadsWhatMarshalJSONWrites(t *testing.T) {
	t.Parallel()
	for _, g := range goldenJSON(t, "tool_intent*.json") {
		var in Intent
		if err := in.UnmarshalJSON(g); err != nil {
			t.Fatal(err)
		}
		line, err := in.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !new(Intent).unmarshalJSONFast(g) || !new(Intent).unmarshalJSONFast(line) {
			t.Errorf("the fast path gives up on %s", line)
		}
		if _, ok := in.appendJSON(nil); !ok {
			t.Errorf("the fast path cannot write %s", line)
		}
	}
	for _, g := range goldenJSON(t, "tool_result*.json") {
		var r Result
		if err := r.UnmarshalJSON(g); err != nil {
			t.Fatal(err)
		}
		r.ErrorMessage = "line 1\nline 2\t<tab>"
		line, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !new(Result).unmarshalJSONFast(g) || !new(Result).unmarshalJSONFast(line) {
			t.Errorf("the fast path gives up on %s", line)
		}
		if _, ok := r.appendJSON(nil); !ok {
			t.Errorf("the fast path cannot write %s", line)
		}
	}
	big := Intent{Seq: math.MinInt64, CreatedAtMs: math.MaxInt64, StepIndex: math.MaxUint32, ToolName: "é\u2028", ToolCallID: "call_<1>",
		Principal: &toolreg.Principal{Subject: "ana <a@example.test>", Scopes: []string{"orders:refund", "orders:read"}}}
	line, _ := big.MarshalJSON()
	if !new(Intent).unmarshalJSONFast(line) {
		t.Errorf("the fast path gives up on %s", line)
	}
	if _, ok := big.appendJSON(nil); !ok {
		t.Errorf("the fast path cannot write %s", line)
	}
}

func FuzzIntentJSONFastPath(f *testing.F) {
	for _, s := range trickyIntentJSON {
		f.Add([]byte(s))
	}
	for _, g := range goldenJSON(f, "tool_intent*.json") {
		f.Add(g)
		f.Add(bytes.Join(bytes.Fields(g), nil))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkIntentJSON(t, data)
	})
}

func FuzzResultJSONFastPath(f *testing.F) {
	for _, s := range trickyResultJSON {
		f.Add([]byte(s))
	}
	for _, g := range goldenJSON(f, "tool_result*.json") {
		f.Add(g)
		f.Add(bytes.Join(bytes.Fields(g), nil))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkResultJSON(t, data)
	})
}

// FuzzJSONFastPathWrites builds intents and results field by field (the
// strings need not be UTF-8, the enums need not have names) and checks that
// MarshalJSON writes the reference's bytes, and that they read back as the
// reference reads them.
func FuzzJSONFastPathWrites(f *testing.F) {
	f.Add("id", []byte("entity"), int64(7), uint32(5), "http.post", []byte(`{"a":"<b>"}`), int64(-1), int32(1), []byte("t"), int32(1), "k1", []byte("sig"), []byte{0xa0, 0x1f, 0x2a}, "call_<1>", uint8(0))
	f.Add("\u2028", []byte(nil), int64(math.MinInt64), uint32(math.MaxUint32), "\n\t\r\b\f\x00", []byte("\xff"), int64(math.MaxInt64), int32(-5), []byte{}, int32(9), "", []byte{}, []byte{0xff}, "\x01\xff", uint8(1))
	f.Fuzz(func(t *testing.T, id string, entity []byte, seq int64, step uint32, tool string, args []byte, ms int64, kind int32, trace []byte, scheme int32, keyID string, sig, unknown []byte, callID string, flags uint8) {
		if flags&1 != 0 && entity == nil {
			entity = []byte{} // written "" rather than null
		}
		in := Intent{ID: id, EntityKey: entity, Seq: seq, StepIndex: step, ToolName: tool, ArgsJSON: args,
			CreatedAtMs: ms, ExpiresAtMs: -ms, Attempt: step / 3, Kind: IntentKind(kind), TraceID: trace,
			SignatureScheme: SignatureScheme(scheme), SigningKeyID: keyID, Signature: sig, ToolCallID: callID, unknown: unknown}
		checkIntentMarshalJSON(t, in)
		if b, err := in.MarshalJSON(); err == nil {
			checkIntentJSON(t, b)
		}
		r := Result{IntentID: id, EntityKey: entity, Seq: seq, Status: Status(kind), Payload: args,
			ErrorMessage: tool + keyID, CompletedAtMs: ms, unknown: unknown}
		checkResultMarshalJSON(t, r)
		if b, err := r.MarshalJSON(); err == nil {
			checkResultJSON(t, b)
		}
	})
}
