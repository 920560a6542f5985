// Package intent owns the beam-agents v1 wire format: an Intent (a staged
// request to run a side-effecting tool once, beam-agents' ToolIntent) and its
// terminal Result (ToolResult), their kinds and statuses, their binary
// (protobuf) and JSON encodings, HMAC-SHA256 signing and verification, and
// IntentID, the UUIDv5 of an activation's position that makes a retried
// activation stage the same intents.
//
// The bytes are the contract with the Python runtime: fields this version does
// not know are kept as read, so re-encoding an intent keeps its signature.
//
// The contract owns ToolIntent's field numbers 1 to 14. toolreg's own fields
// are extensions numbered from 1000, where no field of the contract will go:
// 1000 is tool_call_id (Intent.ToolCallID, the id the model gave the call),
// and 1001 is reserved. The Python runtime keeps them as unknown fields and
// writes them back as read; they are signed like every field but 12 to 14.
// They are written after the contract's fields and before any unknown ones,
// as a reader that keeps them writes them back. The
// package refuses what is not a valid v1 message (*WireError) and intents whose
// signature does not verify (*SignatureError); both are toolreg.ErrTool for
// errors.Is.
//
// It knows nothing of tools, manifests or stores: runner stages intents,
// effector executes them, and both import this package; the root package
// toolreg does not.
package intent
