package effector

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/beam-agents/toolreg/intent"
)

// FuzzApprovalRecords feeds requested and decoded, which read approval
// requests and decisions back from a store, with payloads that start from
// real ones. They must never panic, and whatever they accept must be
// exactly what the effector writes for the approval or decision they
// return: the record re-encoded from it is the same bytes.
func FuzzApprovalRecords(f *testing.F) {
	const id = "013f5770-b9aa-57ba-bf5a-d4c904c26c46"
	seed := func(v any) []byte {
		b, err := marshalCanonical(v)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	for _, p := range []requestedPayload{
		{Approval: "requested", Arguments: json.RawMessage(`{"amount":900,"order_id":"o-9"}`), CreatedAtMs: 1700000000000, ExecutionID: intent.ExecutionID(id), ExpiresAtMs: 1700003600000, RecordExpiresAtMs: 1700090000000, Reason: "Refunds above 500 need a second person.", Step: 2, Tool: "big_refund"},
		{Approval: "requested", Arguments: json.RawMessage(`{"a":[1,2.5,"x\u00e9<>&"]}`), CreatedAtMs: 1, ExecutionID: intent.ExecutionID(id), ExpiresAtMs: 2, SigningKeyID: "k1", Tool: "big_refund", TraceID: "0af7651916cd43dd8448eb211c80319c"},
		{Approval: "requested", CreatedAtMs: -5, ExecutionID: intent.ExecutionID(id), Tool: "ask_a_person"},
	} {
		f.Add(seed(p), uint8(intent.StatusOK), id, p.Tool)
	}
	// Found by fuzzing: hex.DecodeString takes upper case, which the
	// effector never writes.
	f.Add(seed(requestedPayload{Approval: "requested", CreatedAtMs: 1, ExecutionID: intent.ExecutionID(id), Tool: "t", TraceID: "0AF7"}), uint8(intent.StatusOK), id, "t")
	for _, p := range []decisionPayload{
		{AtMs: 1700000000000, By: "ana@example.com", Decision: "approved", Note: "checked the order"},
		{AtMs: 1700000000000, By: "bob", Decision: "denied", Note: "voucher \"already\" given\n"},
		{AtMs: 1700003600000, Decision: "expired"},
	} {
		st := map[string]intent.Status{"approved": intent.StatusOK, "denied": intent.StatusRejected, "expired": intent.StatusExpired}[p.Decision]
		f.Add(seed(p), uint8(st), id, "big_refund")
	}
	f.Fuzz(func(t *testing.T, payload []byte, status uint8, id, tool string) {
		// As an approval request, recorded under id by a claim of tool.
		res := intent.Result{IntentID: id, Status: intent.Status(status), Payload: payload}
		b, err := res.MarshalBinary()
		if err != nil {
			return
		}
		if a, err := requested(Record{ID: id, Tool: tool, State: RecordDone, Result: b}); err == nil {
			p := requestedPayload{
				Approval: "requested", Arguments: a.Arguments, CreatedAtMs: a.RequestedAt.UnixMilli(), ExecutionID: a.ExecutionID,
				ExpiresAtMs: a.ExpiresAt.UnixMilli(), Reason: a.Reason, SigningKeyID: a.signingKeyID, Step: a.Step, Tool: a.Tool,
			}
			if !a.keepUntil.IsZero() {
				p.RecordExpiresAtMs = a.keepUntil.UnixMilli()
			}
			if len(a.traceID) > 0 {
				p.TraceID = hex.EncodeToString(a.traceID)
			}
			again, err := marshalCanonical(p)
			if err != nil || !bytes.Equal(again, payload) {
				t.Fatalf("requested accepted %q, which re-encodes as %q (%v)", payload, again, err)
			}
			if a.ID != id || a.ExecutionID != intent.ExecutionID(id) || a.State != ApprovalPending || cutTool(a.Tool) != tool {
				t.Fatalf("requested(%q) = %+v", payload, a)
			}
		}
		// As a decision on approval id.
		res.IntentID = intent.DecisionID(id)
		if b, err = res.MarshalBinary(); err != nil {
			return
		}
		d, st, err := decoded(id, b)
		if err != nil {
			return
		}
		var p decisionPayload
		switch st {
		case ApprovalApproved, ApprovalDenied:
			if d == nil || d.Verdict.String() != map[ApprovalState]string{ApprovalApproved: "approved", ApprovalDenied: "denied"}[st] {
				t.Fatalf("decoded(%q) = %+v, %v", payload, d, st)
			}
			p = decisionPayload{AtMs: d.At.UnixMilli(), By: d.By, Decision: d.Verdict.String(), Note: d.Note}
		case ApprovalExpired:
			if d != nil {
				t.Fatalf("decoded(%q) = %+v for an expiry", payload, d)
			}
			var q decisionPayload
			_ = json.Unmarshal(payload, &q)
			p = decisionPayload{AtMs: q.AtMs, Decision: "expired"}
		default:
			t.Fatalf("decoded(%q) = state %v", payload, st)
		}
		again, err := marshalCanonical(p)
		if err != nil || !bytes.Equal(again, payload) {
			t.Fatalf("decoded accepted %q, which re-encodes as %q (%v)", payload, again, err)
		}
	})
}
