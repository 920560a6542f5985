package intent

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"
)

// intentNamespace is the beam-agents v1 UUID namespace of intent ids,
// 6f3e9d2a-1c47-5b8e-9a10-2d4f6b8c0e11.
var intentNamespace = [16]byte{0x6f, 0x3e, 0x9d, 0x2a, 0x1c, 0x47, 0x5b, 0x8e, 0x9a, 0x10, 0x2d, 0x4f, 0x6b, 0x8c, 0x0e, 0x11}

// IntentID returns the id of the intent staged at step of activation
// (entityKey, seq): the UUIDv5 (RFC 9562) in the beam-agents v1 namespace of
// "<lowercase hex of entityKey>|<seq>|<step>", in the canonical 8-4-4-4-12
// form. It is the same id the Python runtime computes, and a pure function of
// its arguments, so a retried activation stages the same ids and the effector
// executes each at most once.
func IntentID(entityKey []byte, seq int64, step uint32) string {
	var out [36]byte
	return string(appendIntentID(out[:0], entityKey, seq, step))
}

// IsIntentID reports whether id is IntentID(entityKey, seq, step), without
// allocating: the effector checks every intent it is given.
func IsIntentID(id string, entityKey []byte, seq int64, step uint32) bool {
	var out [36]byte
	return string(appendIntentID(out[:0], entityKey, seq, step)) == id
}

// appendIntentID appends IntentID(entityKey, seq, step) to dst.
func appendIntentID(dst []byte, entityKey []byte, seq int64, step uint32) []byte {
	// namespace || name, on the stack for the usual short keys.
	var buf [128]byte
	b := append(buf[:0], intentNamespace[:]...)
	b = hex.AppendEncode(b, entityKey)
	b = append(b, '|')
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, '|')
	b = strconv.AppendUint(b, uint64(step), 10)
	var out [36]byte
	uuid5(&out, b)
	return append(dst, out[:]...)
}

// uuid5 writes the UUIDv5 of namespace||name, given as b, to out in the
// canonical 8-4-4-4-12 form.
func uuid5(out *[36]byte, b []byte) {
	sum := sha1.Sum(b) // UUIDv5 is defined with SHA-1; it names, it does not protect.
	u := sum[:16]
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant

	hex.Encode(out[0:8], u[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], u[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], u[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], u[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], u[10:16])
}

// ExecutionID returns the id under which the call an APPROVAL intent asks
// for is executed once a person approves it: the UUIDv5, in the same
// namespace, of "approval|<approvalID>|execution". Like IntentID it is a
// pure function of its argument, so a pipeline that staged the approval
// knows where its outcome will be, and a retried decision finds the same
// execution. The name cannot be an IntentID's name, which is hex, "|",
// digits, "|", digits.
func ExecutionID(approvalID string) string { return derivedID(approvalID, "execution") }

// DecisionID returns the id under which a person's decision on the APPROVAL
// intent approvalID is recorded: the UUIDv5 of "approval|<approvalID>|decision".
func DecisionID(approvalID string) string { return derivedID(approvalID, "decision") }

// PublicationID returns the id under which an effector records that it
// published the outcome of the APPROVAL intent approvalID's decision
// (effector.Effector.ResumeDecided): the UUIDv5 of
// "approval|<approvalID>|publication". It is the Go effector's own record;
// nothing on the wire carries it.
func PublicationID(approvalID string) string { return derivedID(approvalID, "publication") }

func derivedID(approvalID, what string) string {
	b := make([]byte, 0, 16+len("approval|")+len(approvalID)+1+len(what))
	b = append(b, intentNamespace[:]...)
	b = append(b, "approval|"...)
	b = append(b, approvalID...)
	b = append(b, '|')
	b = append(b, what...)
	var out [36]byte
	uuid5(&out, b)
	return string(out[:])
}
