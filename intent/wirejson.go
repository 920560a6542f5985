package intent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/beam-agents/toolreg"
)

type intentJSON struct {
	IntentID        string          `json:"intent_id"`
	EntityKey       jsonBytes       `json:"entity_key"`
	Seq             jsonInt64       `json:"seq"`
	StepIndex       jsonUint32      `json:"step_index"`
	ToolName        string          `json:"tool_name"`
	ArgsJSON        string          `json:"args_json"`
	CreatedAtMs     jsonInt64       `json:"created_at_ms"`
	ExpiresAtMs     jsonInt64       `json:"expires_at_ms"`
	Attempt         jsonUint32      `json:"attempt"`
	Kind            IntentKind      `json:"kind"`
	TraceID         jsonBytes       `json:"trace_id,omitempty"`
	SignatureScheme SignatureScheme `json:"signature_scheme,omitempty"`
	SigningKeyID    string          `json:"signing_key_id,omitempty"`
	Signature       jsonBytes       `json:"signature,omitempty"`
	ToolCallID      string          `json:"tool_call_id,omitempty"`
	Principal       *principalJSON  `json:"principal,omitempty"`
	UnknownFields   jsonBytes       `json:"unknown_fields,omitempty"`
}

// principalJSON is the JSON form of an intent's principal (field 1001).
type principalJSON struct {
	Subject string   `json:"subject,omitempty"`
	Scopes  []string `json:"scopes,omitempty"`
}

func toPrincipalJSON(p *toolreg.Principal) *principalJSON {
	if p == nil {
		return nil
	}
	return &principalJSON{Subject: p.Subject, Scopes: p.Scopes}
}

// fromPrincipalJSON reads a principal as the binary form does: no scopes is
// nil scopes.
func fromPrincipalJSON(j *principalJSON) *toolreg.Principal {
	if j == nil {
		return nil
	}
	p := &toolreg.Principal{Subject: j.Subject}
	if len(j.Scopes) > 0 {
		p.Scopes = j.Scopes
	}
	return p
}

type resultJSON struct {
	IntentID      string    `json:"intent_id"`
	EntityKey     jsonBytes `json:"entity_key"`
	Seq           jsonInt64 `json:"seq"`
	Status        Status    `json:"status"`
	Payload       jsonBytes `json:"payload,omitempty"`
	ErrorMessage  string    `json:"error_message,omitempty"`
	CompletedAtMs jsonInt64 `json:"completed_at_ms"`
	UnknownFields jsonBytes `json:"unknown_fields,omitempty"`
}

// MarshalJSON writes the intent's JSON form. The JSON form of Intent and
// Result is for people: logs, dead-letter dumps,
// fixtures written by hand. It has the README's snake_case field names, and it
// reads back to the same wire bytes:
//
//   - bytes fields (entity_key, trace_id, signature, payload) are standard
//     base64, as protojson writes them;
//   - args_json is a JSON string holding the canonical JSON text exactly, so a
//     signed intent still verifies after a trip through JSON;
//   - enums are their wire names ("TOOL", "HMAC_SHA256", "OK"), or their
//     number as a string when this version has no name for it;
//   - integers are JSON numbers, and read from numbers or decimal strings (as
//     protojson writes 64-bit integers), so protojson output with proto field
//     names reads too;
//   - principal, toolreg's extension field 1001, is an object
//     {"subject": ..., "scopes": [...]}, each member left out when empty,
//     and the whole left out when the intent has none;
//   - fields this version does not know are kept, as base64 protobuf bytes,
//     under "unknown_fields".
//
// tool_call_id, toolreg's extension field 1000, is a string like the other
// text fields. Empty trace_id, signature fields, tool_call_id, payload,
// error_message and unknown_fields are left out. Unknown JSON keys are refused, so a typo is an error rather
// than a zero value.
func (in Intent) MarshalJSON() ([]byte, error) {
	if err := in.checkUTF8(); err != nil {
		return nil, err
	}
	if b, ok := in.appendJSON(make([]byte, 0, in.jsonSizeHint())); ok {
		return b, nil
	}
	return json.Marshal(intentJSON{
		IntentID: in.ID, EntityKey: in.EntityKey, Seq: jsonInt64(in.Seq), StepIndex: jsonUint32(in.StepIndex),
		ToolName: in.ToolName, ArgsJSON: string(in.ArgsJSON),
		CreatedAtMs: jsonInt64(in.CreatedAtMs), ExpiresAtMs: jsonInt64(in.ExpiresAtMs), Attempt: jsonUint32(in.Attempt),
		Kind: in.Kind, TraceID: in.TraceID, SignatureScheme: in.SignatureScheme,
		SigningKeyID: in.SigningKeyID, Signature: in.Signature, ToolCallID: in.ToolCallID, Principal: toPrincipalJSON(in.Principal),
		UnknownFields: in.unknown,
	})
}

// UnmarshalJSON reads the form MarshalJSON writes, replacing all of in. Unknown
// keys, trailing data and unknown_fields that are not protobuf bytes are
// refused with an error naming them.
func (in *Intent) UnmarshalJSON(data []byte) error {
	if in.unmarshalJSONFast(data) {
		return nil
	}
	var j intentJSON
	if err := decodeStrictJSON(data, &j); err != nil {
		return fmt.Errorf("toolreg: decoding ToolIntent JSON: %w", err)
	}
	if err := checkUnknownFields(msgToolIntent, j.UnknownFields); err != nil {
		return err
	}
	var args json.RawMessage
	if j.ArgsJSON != "" {
		args = json.RawMessage(j.ArgsJSON)
	}
	*in = Intent{
		ID: j.IntentID, EntityKey: nilIfEmpty(j.EntityKey), Seq: int64(j.Seq), StepIndex: uint32(j.StepIndex),
		ToolName: j.ToolName, ArgsJSON: args,
		CreatedAtMs: int64(j.CreatedAtMs), ExpiresAtMs: int64(j.ExpiresAtMs), Attempt: uint32(j.Attempt),
		Kind: j.Kind, TraceID: nilIfEmpty(j.TraceID), SignatureScheme: j.SignatureScheme,
		SigningKeyID: j.SigningKeyID, Signature: nilIfEmpty(j.Signature), ToolCallID: j.ToolCallID,
		Principal: fromPrincipalJSON(j.Principal), unknown: nilIfEmpty(j.UnknownFields),
	}
	return nil
}

// MarshalJSON writes the result's JSON form, as Intent.MarshalJSON describes:
// the payload is base64, since it is bytes on the wire (an OK result's payload
// is canonical JSON).
func (r Result) MarshalJSON() ([]byte, error) {
	if err := r.checkUTF8(); err != nil {
		return nil, err
	}
	if b, ok := r.appendJSON(make([]byte, 0, r.jsonSizeHint())); ok {
		return b, nil
	}
	return json.Marshal(resultJSON{
		IntentID: r.IntentID, EntityKey: r.EntityKey, Seq: jsonInt64(r.Seq), Status: r.Status,
		Payload: r.Payload, ErrorMessage: r.ErrorMessage, CompletedAtMs: jsonInt64(r.CompletedAtMs),
		UnknownFields: r.unknown,
	})
}

// UnmarshalJSON reads the form MarshalJSON writes, replacing all of r.
func (r *Result) UnmarshalJSON(data []byte) error {
	if r.unmarshalJSONFast(data) {
		return nil
	}
	var j resultJSON
	if err := decodeStrictJSON(data, &j); err != nil {
		return fmt.Errorf("toolreg: decoding ToolResult JSON: %w", err)
	}
	if err := checkUnknownFields(msgToolResult, j.UnknownFields); err != nil {
		return err
	}
	*r = Result{
		IntentID: j.IntentID, EntityKey: nilIfEmpty(j.EntityKey), Seq: int64(j.Seq), Status: j.Status,
		Payload: nilIfEmpty(j.Payload), ErrorMessage: j.ErrorMessage, CompletedAtMs: int64(j.CompletedAtMs),
		unknown: nilIfEmpty(j.UnknownFields),
	}
	return nil
}

func decodeStrictJSON(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		// encoding/json names the field only in an *UnmarshalTypeError, and
		// there by the Go struct's name: say it in the JSON form's terms.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("%s: got %s, want %s", te.Field, te.Value, jsonWant(te.Type))
		}
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("unexpected data after the object")
	}
	return nil
}

// checkUnknownFields refuses unknown_fields that are not whole protobuf
// fields, since they are written to the wire as they are.
func checkUnknownFields(msg string, raw []byte) error {
	_, err := walkFields(msg, raw, func(protowire.Number, protowire.Type, []byte, uint64) (bool, string) {
		return false, ""
	})
	if err != nil {
		return fmt.Errorf("toolreg: decoding %s JSON: unknown_fields: %w", msg, err)
	}
	return nil
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// MarshalText returns the kind's wire name (see String).
func (k IntentKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a wire name such as "TOOL", or a decimal number.
func (k *IntentKind) UnmarshalText(b []byte) error {
	v, err := parseEnum("kind", string(b), func(i int32) string { return IntentKind(i).String() })
	*k = IntentKind(v)
	return err
}

// MarshalText returns the scheme's wire name (see String).
func (s SignatureScheme) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a wire name such as "HMAC_SHA256", or a decimal number.
func (s *SignatureScheme) UnmarshalText(b []byte) error {
	v, err := parseEnum("signature scheme", string(b), func(i int32) string { return SignatureScheme(i).String() })
	*s = SignatureScheme(v)
	return err
}

// MarshalText returns the status's wire name (see String).
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a wire name such as "OK", or a decimal number.
func (s *Status) UnmarshalText(b []byte) error {
	v, err := parseEnum("status", string(b), func(i int32) string { return Status(i).String() })
	*s = Status(v)
	return err
}

// parseEnum reads a wire name, as name (the enum's String) gives them, or a
// decimal int32. The names are those of 0, 1, 2... up to the first value that
// String writes as its number.
func parseEnum(what, s string, name func(int32) string) (int32, error) {
	named := func(i int32) bool { return name(i) != strconv.Itoa(int(i)) }
	for i := int32(0); named(i); i++ {
		if s == name(i) {
			return i, nil
		}
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		var names []string
		for i := int32(0); named(i); i++ {
			names = append(names, strconv.Quote(name(i)))
		}
		return 0, fmt.Errorf("toolreg: unknown %s %q: want one of %s, or a number", what, s, strings.Join(names, ", "))
	}
	return int32(n), nil
}

// jsonWant says what a field of Go type t holds in the JSON form.
func jsonWant(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int64:
		return "a 64-bit integer, as a number or a string of decimal digits"
	case reflect.Uint32:
		return "an unsigned 32-bit integer, as a number or a string of decimal digits"
	case reflect.Slice:
		return "a string of standard base64"
	}
	return "a string" // the text fields, and the enums by name
}

// jsonBytes is a bytes field, standard base64 as encoding/json writes a
// []byte. It reads the same way, but a bad value is an
// *json.UnmarshalTypeError, which encoding/json completes with the field's
// name (a base64 error of its own names none).
type jsonBytes []byte

func (p *jsonBytes) UnmarshalJSON(b []byte) error {
	var v []byte
	if err := json.Unmarshal(b, &v); err != nil {
		got := string(b)
		if len(got) > 40 { // a payload can be long
			got = strings.ToValidUTF8(got[:37], "") + "..."
		}
		return &json.UnmarshalTypeError{Value: got, Type: reflect.TypeFor[[]byte]()}
	}
	*p = v
	return nil
}

// jsonInt64 and jsonUint32 write a JSON number and read a number or a string
// of decimal digits. A bad value is an *json.UnmarshalTypeError, which
// encoding/json completes with the field's name.
type (
	jsonInt64  int64
	jsonUint32 uint32
)

func (n *jsonInt64) UnmarshalJSON(b []byte) error {
	v, err := parseJSONInt(b, 64, true)
	*n = jsonInt64(v)
	return err
}

func (n *jsonUint32) UnmarshalJSON(b []byte) error {
	v, err := parseJSONInt(b, 32, false)
	*n = jsonUint32(v)
	return err
}

func parseJSONInt(b []byte, bits int, signed bool) (int64, error) {
	s := string(b)
	if s == "null" {
		return 0, nil
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if signed {
		v, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return 0, &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeFor[int64]()}
		}
		return v, nil
	}
	v, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return 0, &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeFor[uint32]()}
	}
	return int64(v), nil
}
