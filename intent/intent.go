package intent

import (
	"encoding/json"
	"strconv"

	"github.com/beam-agents/toolreg"
)

// IntentKind says what an intent asks for.
type IntentKind int32

// The kinds of the beam-agents v1 wire format.
const (
	KindUnspecified IntentKind = 0 // written before the field existed; read as KindTool
	KindTool        IntentKind = 1 // execute a side-effecting tool
	KindApproval    IntentKind = 2 // ask a human; never executed
)

// SignatureScheme names how an intent is signed.
type SignatureScheme int32

// The schemes of the beam-agents v1 wire format.
const (
	SchemeUnspecified SignatureScheme = 0 // unsigned
	SchemeHMACSHA256  SignatureScheme = 1
)

// Intent is a staged request to run a side-effecting tool once: beam-agents'
// ToolIntent. Its ID is a pure function of (EntityKey, Seq, StepIndex), so a
// retried activation stages the same intent, and the effector executes each
// ID at most once.
//
// MarshalBinary and UnmarshalBinary read and write the beam-agents v1 protobuf
// bytes, keeping fields this version does not know; MarshalJSON and
// UnmarshalJSON a form for people. SignHMAC and VerifyHMAC sign and check it.
type Intent struct {
	ID              string          // field 1: UUIDv5 of the activation position
	EntityKey       []byte          // field 2
	Seq             int64           // field 3
	StepIndex       uint32          // field 4
	ToolName        string          // field 5
	ArgsJSON        json.RawMessage // field 6: canonical JSON
	CreatedAtMs     int64           // field 7
	ExpiresAtMs     int64           // field 8
	Attempt         uint32          // field 9
	Kind            IntentKind      // field 10
	TraceID         []byte          // field 11
	SignatureScheme SignatureScheme // field 12
	SigningKeyID    string          // field 13
	Signature       []byte          // field 14

	// ToolCallID is the id the model gave the tool call this intent stages
	// (OpenAI's call_..., Anthropic's toolu_...), or "" when the caller had
	// none. It is toolreg's extension field 1000, not part of the beam-agents
	// v1 contract: the Python runtime keeps it as an unknown field, so its
	// bytes round-trip there, and the signature covers it (only fields 12 to
	// 14 are left out of what is signed). It is not part of the intent id,
	// which stays a pure function of the position. The effector records it
	// on its execute_tool span as gen_ai.tool.call.id.
	ToolCallID string // field 1000 (toolreg extension)
	// Principal is who staged the call and the scopes it held
	// (runner.WithPrincipal), or nil when the producer recorded none. It is
	// toolreg's extension field 1001, not part of the beam-agents v1
	// contract: a reader of the contract alone (the Python runtime) keeps it
	// as an unknown field, so its bytes round-trip there. The signature
	// covers it (only fields 12 to 14 are left out of what is signed), so a
	// signed intent's principal cannot be swapped, and the effector refuses
	// to run an intent whose principal lacks the tool's scopes. It is not
	// part of the intent id, which stays a pure function of the position.
	Principal *toolreg.Principal // field 1001 (toolreg extension)

	// unknown holds fields this version does not know, as read, so that
	// re-encoding (and so a signature over the bytes) keeps them.
	unknown []byte
}

// Status is a Result's outcome.
type Status int32

// The statuses of the beam-agents v1 wire format.
const (
	StatusUnspecified Status = 0
	StatusOK          Status = 1 // the tool ran and returned; Payload holds its canonical JSON result
	StatusError       Status = 2 // the tool ran (or may have) and failed: its effect is unknown
	StatusExpired     Status = 3 // the intent expired before it was executed; nothing ran
	StatusRejected    Status = 4 // the intent was refused before execution; nothing ran
)

// Result is the terminal outcome of one intent: beam-agents' ToolResult. It
// has the same binary and JSON forms as Intent.
type Result struct {
	IntentID      string // field 1
	EntityKey     []byte // field 2
	Seq           int64  // field 3
	Status        Status // field 4
	Payload       []byte // field 5
	ErrorMessage  string // field 6
	CompletedAtMs int64  // field 7

	unknown []byte
}

// String returns the kind's wire name, such as "TOOL", or its number when it
// has no name in this version.
func (k IntentKind) String() string {
	switch k {
	case KindUnspecified:
		return "TOOL_KIND_UNSPECIFIED"
	case KindTool:
		return "TOOL"
	case KindApproval:
		return "APPROVAL"
	}
	return strconv.Itoa(int(k))
}

// String returns the scheme's wire name, such as "HMAC_SHA256", or its number
// when it has no name in this version.
func (s SignatureScheme) String() string {
	switch s {
	case SchemeUnspecified:
		return "SIGNATURE_SCHEME_UNSPECIFIED"
	case SchemeHMACSHA256:
		return "HMAC_SHA256"
	}
	return strconv.Itoa(int(s))
}

// String returns the status's wire name, such as "OK", or its number when it
// has no name in this version.
func (s Status) String() string {
	switch s {
	case StatusUnspecified:
		return "STATUS_UNSPECIFIED"
	case StatusOK:
		return "OK"
	case StatusError:
		return "ERROR"
	case StatusExpired:
		return "EXPIRED"
	case StatusRejected:
		return "REJECTED"
	}
	return strconv.Itoa(int(s))
}
