package mcpserver

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzStamp checks that stamping never panics, stamps every tools/call whose
// params and _meta are objects (or _meta is absent or null) with the id's
// JSON, leaves every other member as it was, and passes anything else
// through untouched for the SDK to judge.
func FuzzStamp(f *testing.F) {
	for _, seed := range []struct {
		id     string
		params string
	}{
		{"7", `{"name":"charge","arguments":{"amount":5}}`},
		{`"abc"`, `{"name":"charge","arguments":{},"_meta":{"toolreg/idempotency-key":"k","progressToken":3}}`},
		{"1", `{"name":"charge","_meta":{"toolreg/jsonrpc-id":"forged"}}`},
		{"2", `{"_meta":null}`},
		{"3", `{"_meta":[1,2]}`},
		{"4", `{"_meta":"x"}`},
		{"5", `null`},
		{"6", `[]`},
		{"7", `{"name":`},
		{"8", ``},
		{`"\u00e9"`, `{"a":1,"a":2}`},
	} {
		f.Add(seed.id, []byte(seed.params))
	}
	f.Fuzz(func(t *testing.T, idJSON string, params []byte) {
		var idVal any
		if err := json.Unmarshal([]byte(idJSON), &idVal); err != nil {
			return
		}
		id, err := jsonrpc.MakeID(idVal)
		if err != nil {
			return
		}
		in := append([]byte(nil), params...)
		req := &jsonrpc.Request{ID: id, Method: "tools/call", Params: in}
		out, ok := stamp(req).(*jsonrpc.Request)
		if !ok {
			t.Fatalf("stamp returned a %T", out)
		}

		var before map[string]json.RawMessage
		stampable := json.Unmarshal(params, &before) == nil && before != nil
		var meta map[string]json.RawMessage
		if raw, has := before["_meta"]; stampable && has && string(raw) != "null" {
			stampable = json.Unmarshal(raw, &meta) == nil && meta != nil
		}
		if !stampable {
			if !bytes.Equal(out.Params, params) {
				t.Fatalf("params %q it cannot stamp became %q", params, out.Params)
			}
			return
		}
		var after map[string]json.RawMessage
		if err := json.Unmarshal(out.Params, &after); err != nil {
			t.Fatalf("stamped params %q are not an object: %v", out.Params, err)
		}
		var afterMeta map[string]any
		if err := json.Unmarshal(after["_meta"], &afterMeta); err != nil {
			t.Fatalf("stamped _meta %q is not an object: %v", after["_meta"], err)
		}
		wantID, _ := json.Marshal(id.Raw())
		if afterMeta[metaRequestID] != string(wantID) {
			t.Errorf("_meta[%s] = %v, want %s", metaRequestID, afterMeta[metaRequestID], wantID)
		}
		for k, v := range before {
			if k == "_meta" {
				continue
			}
			if !jsonEqual(v, after[k]) {
				t.Errorf("member %q changed from %s to %s", k, v, after[k])
			}
		}
		for k, v := range meta {
			if k != metaRequestID && !jsonEqualMember(after["_meta"], k, v) {
				t.Errorf("_meta member %q changed", k)
			}
		}
	})
}

func jsonEqual(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

func jsonEqualMember(obj json.RawMessage, key string, want json.RawMessage) bool {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return false
	}
	return jsonEqual(m[key], want)
}

func TestStampLeavesOtherMessagesAlone(t *testing.T) {
	t.Parallel()
	id, _ := jsonrpc.MakeID(float64(3))
	for _, msg := range []jsonrpc.Message{
		&jsonrpc.Request{ID: id, Method: "tools/list", Params: json.RawMessage(`{}`)},
		&jsonrpc.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"x"}`)}, // a notification: no id
		&jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)},
	} {
		before, _ := jsonrpc.EncodeMessage(msg)
		after, _ := jsonrpc.EncodeMessage(stamp(msg))
		if !bytes.Equal(before, after) {
			t.Errorf("stamp changed %s into %s", before, after)
		}
	}
}

func TestSeqOfSeparatesItsParts(t *testing.T) {
	t.Parallel()
	seen := map[int64][]string{}
	for _, parts := range [][]string{
		{"key", "charge", "abc"},
		{"key", "chargea", "bc"},
		{"key", "charg", "eabc"},
		{"jsonrpc-id", "charge", "abc"},
		{"key", "refund", "abc"},
		{"key", "charge", "abd"},
	} {
		s := seqOf(parts...)
		if s < 0 {
			t.Errorf("seqOf(%q) = %d, want a non-negative seq", parts, s)
		}
		if prev, dup := seen[s]; dup {
			t.Errorf("seqOf(%q) = seqOf(%q)", parts, prev)
		}
		seen[s] = parts
		if again := seqOf(parts...); again != s {
			t.Errorf("seqOf(%q) is not deterministic: %d then %d", parts, s, again)
		}
	}
}
