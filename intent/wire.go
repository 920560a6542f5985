package intent

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/beam-agents/toolreg"
)

// This file is the beam-agents v1 wire format of Intent (ToolIntent) and
// Result (ToolResult): proto3 messages whose field numbers are the contract
// with the Python runtime. The encoder is written with protowire rather than
// generated code so that the bytes are exactly what the contract says, with no
// copy into and out of a generated struct:
//
//   - known fields in field-number order, each only when it is not its zero
//     value (proto3 implicit presence), as protobuf-go and Python's upb write;
//   - then toolreg's extension fields (tool_call_id, 1000; principal, 1001,
//     a message of its own: 1 subject, 2 repeated scopes), which the Python
//     runtime does not know and so keeps, and writes back, as unknown fields
//     in the order it read them: after its known fields, as here;
//   - then the unknown fields, exactly as they were read, so that an intent
//     written by a newer runtime keeps its signature when passed on.
//
// The decoder accepts what a proto3 parser accepts: fields in any order, a
// repeated scalar field's last value wins, a known field number with an
// unexpected wire type is kept as an unknown field, and string fields must be
// valid UTF-8.

const (
	msgToolIntent = "ToolIntent"
	msgToolResult = "ToolResult"
)

// ToolIntent field numbers.
const (
	fIntentID        protowire.Number = 1
	fEntityKey       protowire.Number = 2
	fSeq             protowire.Number = 3
	fStepIndex       protowire.Number = 4
	fToolName        protowire.Number = 5
	fArgsJSON        protowire.Number = 6
	fCreatedAtMs     protowire.Number = 7
	fExpiresAtMs     protowire.Number = 8
	fAttempt         protowire.Number = 9
	fKind            protowire.Number = 10
	fTraceID         protowire.Number = 11
	fSignatureScheme protowire.Number = 12
	fSigningKeyID    protowire.Number = 13
	fSignature       protowire.Number = 14

	// toolreg's extension fields, numbered from 1000 so that no future field
	// of the beam-agents v1 contract (which owns 1 to 14) can collide with
	// them. A reader of the contract alone keeps them as unknown fields.
	fToolCallID protowire.Number = 1000
	fPrincipal  protowire.Number = 1001
)

// Principal message field numbers (field 1001 of ToolIntent).
const (
	fPrincipalSubject protowire.Number = 1
	fPrincipalScopes  protowire.Number = 2
)

// ToolResult field numbers.
const (
	fResIntentID      protowire.Number = 1
	fResEntityKey     protowire.Number = 2
	fResSeq           protowire.Number = 3
	fResStatus        protowire.Number = 4
	fResPayload       protowire.Number = 5
	fResErrorMessage  protowire.Number = 6
	fResCompletedAtMs protowire.Number = 7
)

// WireError reports bytes that are not a valid beam-agents v1 message, or a
// value that cannot be written as one.
type WireError struct {
	Message string // "ToolIntent" or "ToolResult"
	Field   string // the field's name, such as "tool_name"; "" when not known
	Offset  int    // byte offset of the field's tag in the input; -1 when encoding
	Reason  string
}

func (e *WireError) Error() string {
	where := e.Message
	if e.Field != "" {
		where += "." + e.Field
	}
	if e.Offset >= 0 {
		return fmt.Sprintf("toolreg: decoding %s at byte %d: %s", where, e.Offset, e.Reason)
	}
	return fmt.Sprintf("toolreg: encoding %s: %s", where, e.Reason)
}

func (e *WireError) Is(target error) bool { return target == toolreg.ErrTool }

// MarshalBinary returns the intent's beam-agents v1 protobuf bytes. The same
// intent always gives the same bytes. It fails only on a string field that is
// not valid UTF-8, which no proto3 reader accepts.
func (in *Intent) MarshalBinary() ([]byte, error) {
	return in.appendWire(make([]byte, 0, in.wireSize(true)), true)
}

// AppendBinary appends the intent's protobuf bytes (see MarshalBinary) to b.
func (in *Intent) AppendBinary(b []byte) ([]byte, error) {
	return in.appendWire(b, true)
}

// appendWire appends the serialization; without signed, fields 12 to 14 are
// left out, which is what the signature covers.
func (in *Intent) appendWire(b []byte, signed bool) ([]byte, error) {
	if err := in.checkUTF8(); err != nil {
		return nil, err
	}
	b = appendBytesField(b, fIntentID, in.ID)
	b = appendBytesField(b, fEntityKey, in.EntityKey)
	b = appendVarintField(b, fSeq, uint64(in.Seq))
	b = appendVarintField(b, fStepIndex, uint64(in.StepIndex))
	b = appendBytesField(b, fToolName, in.ToolName)
	b = appendBytesField(b, fArgsJSON, in.ArgsJSON)
	b = appendVarintField(b, fCreatedAtMs, uint64(in.CreatedAtMs))
	b = appendVarintField(b, fExpiresAtMs, uint64(in.ExpiresAtMs))
	b = appendVarintField(b, fAttempt, uint64(in.Attempt))
	b = appendVarintField(b, fKind, uint64(int64(in.Kind))) // proto sign-extends a negative int32 enum
	b = appendBytesField(b, fTraceID, in.TraceID)
	if signed {
		b = appendVarintField(b, fSignatureScheme, uint64(int64(in.SignatureScheme)))
		b = appendBytesField(b, fSigningKeyID, in.SigningKeyID)
		b = appendBytesField(b, fSignature, in.Signature)
	}
	b = appendBytesField(b, fToolCallID, in.ToolCallID)
	b = appendPrincipal(b, in.Principal)
	return append(b, in.unknown...), nil
}

func (in *Intent) wireSize(signed bool) int {
	n := bytesFieldSize(fIntentID, in.ID) +
		bytesFieldSize(fEntityKey, in.EntityKey) +
		varintFieldSize(fSeq, uint64(in.Seq)) +
		varintFieldSize(fStepIndex, uint64(in.StepIndex)) +
		bytesFieldSize(fToolName, in.ToolName) +
		bytesFieldSize(fArgsJSON, in.ArgsJSON) +
		varintFieldSize(fCreatedAtMs, uint64(in.CreatedAtMs)) +
		varintFieldSize(fExpiresAtMs, uint64(in.ExpiresAtMs)) +
		varintFieldSize(fAttempt, uint64(in.Attempt)) +
		varintFieldSize(fKind, uint64(int64(in.Kind))) +
		bytesFieldSize(fTraceID, in.TraceID) +
		bytesFieldSize(fToolCallID, in.ToolCallID) +
		principalFieldSize(in.Principal) +
		len(in.unknown)
	if signed {
		n += varintFieldSize(fSignatureScheme, uint64(int64(in.SignatureScheme))) +
			bytesFieldSize(fSigningKeyID, in.SigningKeyID) +
			bytesFieldSize(fSignature, in.Signature)
	}
	return n
}

func (in *Intent) checkUTF8() error {
	for _, f := range [...]struct {
		name string
		ok   bool
	}{
		{"intent_id", utf8.ValidString(in.ID)},
		{"tool_name", utf8.ValidString(in.ToolName)},
		{"args_json", utf8.Valid(in.ArgsJSON)},
		{"signing_key_id", utf8.ValidString(in.SigningKeyID)},
		{"tool_call_id", utf8.ValidString(in.ToolCallID)},
		{"principal", validPrincipal(in.Principal)},
	} {
		if !f.ok {
			return &WireError{Message: msgToolIntent, Field: f.name, Offset: -1, Reason: "string field is not valid UTF-8"}
		}
	}
	return nil
}

// appendPrincipal appends field 1001 when p is set: a message holding the
// subject (1, unless empty) and each scope (2, repeated, in order). A
// non-nil p is written even when empty, so that it reads back non-nil.
func appendPrincipal(b []byte, p *toolreg.Principal) []byte {
	if p == nil {
		return b
	}
	b = protowire.AppendTag(b, fPrincipal, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(principalSize(p)))
	b = appendBytesField(b, fPrincipalSubject, p.Subject)
	for _, s := range p.Scopes {
		// A repeated string writes every element, an empty one too.
		b = protowire.AppendTag(b, fPrincipalScopes, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	return b
}

func principalSize(p *toolreg.Principal) int {
	n := bytesFieldSize(fPrincipalSubject, p.Subject)
	for _, s := range p.Scopes {
		n += protowire.SizeTag(fPrincipalScopes) + protowire.SizeBytes(len(s))
	}
	return n
}

func principalFieldSize(p *toolreg.Principal) int {
	if p == nil {
		return 0
	}
	return protowire.SizeTag(fPrincipal) + protowire.SizeBytes(principalSize(p))
}

func validPrincipal(p *toolreg.Principal) bool {
	if p == nil {
		return true
	}
	if !utf8.ValidString(p.Subject) {
		return false
	}
	for _, s := range p.Scopes {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// readPrincipal reads the bytes of field 1001 into p. A principal is
// authority, and is not read in part: a field of it this version does not
// know (or one of the wrong wire type) refuses the whole intent, where a
// protobuf reader would keep it as an unknown field of the principal; so
// does text that is not UTF-8, as in every string field.
func readPrincipal(p *toolreg.Principal, v []byte) string {
	for len(v) > 0 {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 {
			return protowire.ParseError(n).Error()
		}
		m := protowire.ConsumeFieldValue(num, typ, v[n:])
		if m < 0 {
			return protowire.ParseError(m).Error()
		}
		if typ != protowire.BytesType || num != fPrincipalSubject && num != fPrincipalScopes {
			return fmt.Sprintf("field %d of wire type %d is not one this version knows (1 subject, 2 scopes, both strings): a principal is authority, and is not read in part", num, typ)
		}
		s, _ := protowire.ConsumeBytes(v[n:])
		if !utf8.Valid(s) {
			return "string field is not valid UTF-8"
		}
		if num == fPrincipalSubject {
			p.Subject = string(s)
		} else {
			p.Scopes = append(p.Scopes, string(s))
		}
		v = v[n+m:]
	}
	return ""
}

// UnmarshalBinary reads beam-agents v1 ToolIntent bytes into in, replacing
// all of it. Fields this version does not know are kept and written back, after
// the known ones, by MarshalBinary. Bad bytes give a *WireError and leave in
// unchanged. in keeps no reference to data.
func (in *Intent) UnmarshalBinary(data []byte) error {
	var x Intent
	unknown, err := walkFields(msgToolIntent, data, func(num protowire.Number, typ protowire.Type, v []byte, u uint64) (bool, string) {
		switch typ {
		case protowire.VarintType:
			switch num {
			case fSeq:
				x.Seq = int64(u)
			case fStepIndex:
				x.StepIndex = uint32(u)
			case fCreatedAtMs:
				x.CreatedAtMs = int64(u)
			case fExpiresAtMs:
				x.ExpiresAtMs = int64(u)
			case fAttempt:
				x.Attempt = uint32(u)
			case fKind:
				x.Kind = IntentKind(int32(u))
			case fSignatureScheme:
				x.SignatureScheme = SignatureScheme(int32(u))
			default:
				return false, ""
			}
		case protowire.BytesType:
			switch num {
			case fIntentID:
				return stringField(&x.ID, v)
			case fEntityKey:
				x.EntityKey = cloneBytes(v)
			case fToolName:
				return stringField(&x.ToolName, v)
			case fArgsJSON:
				if !utf8.Valid(v) {
					return true, "string field is not valid UTF-8"
				}
				x.ArgsJSON = cloneBytes(v)
			case fTraceID:
				x.TraceID = cloneBytes(v)
			case fSigningKeyID:
				return stringField(&x.SigningKeyID, v)
			case fSignature:
				x.Signature = cloneBytes(v)
			case fToolCallID:
				return stringField(&x.ToolCallID, v)
			case fPrincipal:
				if x.Principal != nil {
					// A protobuf reader would merge the two: a principal is
					// written once, and read only as written.
					return true, "the principal appears twice: an intent carries one"
				}
				x.Principal = &toolreg.Principal{}
				if bad := readPrincipal(x.Principal, v); bad != "" {
					return true, bad
				}
			default:
				return false, ""
			}
		default:
			return false, ""
		}
		return true, ""
	})
	if err != nil {
		return err
	}
	x.unknown = unknown
	*in = x
	return nil
}

// MarshalBinary returns the result's beam-agents v1 protobuf bytes. The same
// result always gives the same bytes. It fails only on a string field that is
// not valid UTF-8.
func (r *Result) MarshalBinary() ([]byte, error) {
	return r.AppendBinary(make([]byte, 0, r.wireSize()))
}

// AppendBinary appends the result's protobuf bytes (see MarshalBinary) to b.
func (r *Result) AppendBinary(b []byte) ([]byte, error) {
	if err := r.checkUTF8(); err != nil {
		return nil, err
	}
	b = appendBytesField(b, fResIntentID, r.IntentID)
	b = appendBytesField(b, fResEntityKey, r.EntityKey)
	b = appendVarintField(b, fResSeq, uint64(r.Seq))
	b = appendVarintField(b, fResStatus, uint64(int64(r.Status)))
	b = appendBytesField(b, fResPayload, r.Payload)
	b = appendBytesField(b, fResErrorMessage, r.ErrorMessage)
	b = appendVarintField(b, fResCompletedAtMs, uint64(r.CompletedAtMs))
	return append(b, r.unknown...), nil
}

func (r *Result) wireSize() int {
	return bytesFieldSize(fResIntentID, r.IntentID) +
		bytesFieldSize(fResEntityKey, r.EntityKey) +
		varintFieldSize(fResSeq, uint64(r.Seq)) +
		varintFieldSize(fResStatus, uint64(int64(r.Status))) +
		bytesFieldSize(fResPayload, r.Payload) +
		bytesFieldSize(fResErrorMessage, r.ErrorMessage) +
		varintFieldSize(fResCompletedAtMs, uint64(r.CompletedAtMs)) +
		len(r.unknown)
}

func (r *Result) checkUTF8() error {
	if !utf8.ValidString(r.IntentID) {
		return &WireError{Message: msgToolResult, Field: "intent_id", Offset: -1, Reason: "string field is not valid UTF-8"}
	}
	if !utf8.ValidString(r.ErrorMessage) {
		return &WireError{Message: msgToolResult, Field: "error_message", Offset: -1, Reason: "string field is not valid UTF-8"}
	}
	return nil
}

// UnmarshalBinary reads beam-agents v1 ToolResult bytes into r, replacing all
// of it. Unknown fields are kept as for Intent. Bad bytes give a *WireError and
// leave r unchanged. r keeps no reference to data.
func (r *Result) UnmarshalBinary(data []byte) error {
	var x Result
	unknown, err := walkFields(msgToolResult, data, func(num protowire.Number, typ protowire.Type, v []byte, u uint64) (bool, string) {
		switch typ {
		case protowire.VarintType:
			switch num {
			case fResSeq:
				x.Seq = int64(u)
			case fResStatus:
				x.Status = Status(int32(u))
			case fResCompletedAtMs:
				x.CompletedAtMs = int64(u)
			default:
				return false, ""
			}
		case protowire.BytesType:
			switch num {
			case fResIntentID:
				return stringField(&x.IntentID, v)
			case fResEntityKey:
				x.EntityKey = cloneBytes(v)
			case fResPayload:
				x.Payload = cloneBytes(v)
			case fResErrorMessage:
				return stringField(&x.ErrorMessage, v)
			default:
				return false, ""
			}
		default:
			return false, ""
		}
		return true, ""
	})
	if err != nil {
		return err
	}
	x.unknown = unknown
	*r = x
	return nil
}

// walkFields reads data field by field. For each varint or length-delimited
// field it calls set with the field's value (u for a varint, v for bytes);
// set says whether the message knows the field and, if the value is bad, why.
// Fields set does not know, and fields of other wire types, are returned raw,
// in order, as the message's unknown fields.
func walkFields(msg string, data []byte, set func(num protowire.Number, typ protowire.Type, v []byte, u uint64) (known bool, bad string)) ([]byte, error) {
	var unknown []byte
	for off := 0; off < len(data); {
		num, typ, n := protowire.ConsumeTag(data[off:])
		if n < 0 {
			return nil, &WireError{Message: msg, Offset: off, Reason: protowire.ParseError(n).Error()}
		}
		if num > protowire.MaxValidNumber {
			return nil, &WireError{Message: msg, Offset: off, Reason: fmt.Sprintf("field number %d is out of range", num)}
		}
		var (
			v []byte
			u uint64
			m int
		)
		switch typ {
		case protowire.VarintType:
			u, m = protowire.ConsumeVarint(data[off+n:])
		case protowire.BytesType:
			v, m = protowire.ConsumeBytes(data[off+n:])
		default:
			m = protowire.ConsumeFieldValue(num, typ, data[off+n:])
		}
		if m < 0 {
			return nil, &WireError{Message: msg, Field: fieldName(msg, num), Offset: off, Reason: protowire.ParseError(m).Error()}
		}
		known := false
		if typ == protowire.VarintType || typ == protowire.BytesType {
			var bad string
			known, bad = set(num, typ, v, u)
			if bad != "" {
				return nil, &WireError{Message: msg, Field: fieldName(msg, num), Offset: off, Reason: bad}
			}
		}
		if !known {
			unknown = append(unknown, data[off:off+n+m]...)
		}
		off += n + m
	}
	return unknown, nil
}

func stringField(dst *string, v []byte) (bool, string) {
	if !utf8.Valid(v) {
		return true, "string field is not valid UTF-8"
	}
	*dst = string(v)
	return true, ""
}

func cloneBytes(v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	return append([]byte(nil), v...)
}

var (
	intentFieldNames = [...]string{"", "intent_id", "entity_key", "seq", "step_index", "tool_name", "args_json",
		"created_at_ms", "expires_at_ms", "attempt", "kind", "trace_id", "signature_scheme", "signing_key_id", "signature"}
	resultFieldNames = [...]string{"", "intent_id", "entity_key", "seq", "status", "payload", "error_message", "completed_at_ms"}
)

func fieldName(msg string, num protowire.Number) string {
	names := intentFieldNames[:]
	if msg == msgToolIntent && num == fToolCallID {
		return "tool_call_id"
	}
	if msg == msgToolIntent && num == fPrincipal {
		return "principal"
	}
	if msg == msgToolResult {
		names = resultFieldNames[:]
	}
	if num > 0 && int(num) < len(names) {
		return names[num]
	}
	return fmt.Sprintf("field %d", num)
}

// The proto3 field writers leave a zero value out, as every proto3 encoder does.

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// appendBytesField writes a string or bytes field: both are
// length-delimited, with the same bytes on the wire.
func appendBytesField[T ~string | ~[]byte](b []byte, num protowire.Number, v T) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(len(v)))
	return append(b, v...)
}

func varintFieldSize(num protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

func bytesFieldSize[T ~string | ~[]byte](num protowire.Number, v T) int {
	if len(v) == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(len(v))
}
