package intent_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/beam-agents/toolreg/intent"
)

func ExampleIntentID() {
	// The id of the intent staged at step 2 of activation ("entity-1", seq 7):
	// the same in every retry of that activation, and in the Python runtime.
	fmt.Println(intent.IntentID([]byte("entity-1"), 7, 2))
	// Output: ae132720-ef00-5246-b526-5b18bec03dd0
}

func ExampleIntent_VerifyHMAC() {
	in := intent.Intent{
		ID:        intent.IntentID([]byte("entity-1"), 7, 2),
		EntityKey: []byte("entity-1"), Seq: 7, StepIndex: 2,
		ToolName: "issue_refund", ArgsJSON: json.RawMessage(`{"amount":25,"order_id":"o-1"}`),
		CreatedAtMs: 1700000000000, ExpiresAtMs: 1700003600000, Kind: intent.KindTool,
	}
	keys := map[string][]byte{"k1": []byte("a 32-byte secret from your vault")}
	if err := in.SignHMAC("k1", keys["k1"]); err != nil {
		panic(err)
	}
	wire, _ := in.MarshalBinary() // what goes on the queue

	var got intent.Intent
	if err := got.UnmarshalBinary(wire); err != nil {
		panic(err)
	}
	fmt.Println("as sent:", got.VerifyHMAC(keys))

	got.ArgsJSON = json.RawMessage(`{"amount":2500,"order_id":"o-1"}`)
	err := got.VerifyHMAC(keys)
	fmt.Println("tampered, bad signature:", errors.Is(err, intent.ErrBadSignature))
	// Output:
	// as sent: <nil>
	// tampered, bad signature: true
}

func ExampleIntent_MarshalJSON() {
	in := intent.Intent{
		ID: "11111111-2222-5333-8444-555555555555", EntityKey: []byte("entity-1"), Seq: 7, StepIndex: 2,
		ToolName: "http.post", ArgsJSON: json.RawMessage(`{"url":"https://example.test"}`),
		CreatedAtMs: 1700000000000, ExpiresAtMs: 1700000060000, Kind: intent.KindTool,
	}
	b, _ := json.MarshalIndent(in, "", "  ")
	fmt.Println(string(b))
	// Output:
	// {
	//   "intent_id": "11111111-2222-5333-8444-555555555555",
	//   "entity_key": "ZW50aXR5LTE=",
	//   "seq": 7,
	//   "step_index": 2,
	//   "tool_name": "http.post",
	//   "args_json": "{\"url\":\"https://example.test\"}",
	//   "created_at_ms": 1700000000000,
	//   "expires_at_ms": 1700000060000,
	//   "attempt": 0,
	//   "kind": "TOOL"
	// }
}
