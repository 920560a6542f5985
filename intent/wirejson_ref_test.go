package intent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The encoding/json implementation of the JSON form, as it was before the fast
// paths of wirejson_fast.go: the reference they are tested and fuzzed against.
// Keep it as it is: it says what the JSON form accepts and writes. (A field
// added to the form, such as tool_call_id and principal, is added here as
// encoding/json reads and writes it, and the fast paths follow.)

func refUnmarshalIntentJSON(data []byte) (Intent, error) {
	var j intentJSON
	if err := refDecodeStrictJSON(data, &j); err != nil {
		return Intent{}, fmt.Errorf("toolreg: decoding ToolIntent JSON: %w", err)
	}
	if err := checkUnknownFields(msgToolIntent, j.UnknownFields); err != nil {
		return Intent{}, err
	}
	var args json.RawMessage
	if j.ArgsJSON != "" {
		args = json.RawMessage(j.ArgsJSON)
	}
	return Intent{
		ID: j.IntentID, EntityKey: nilIfEmpty(j.EntityKey), Seq: int64(j.Seq), StepIndex: uint32(j.StepIndex),
		ToolName: j.ToolName, ArgsJSON: args,
		CreatedAtMs: int64(j.CreatedAtMs), ExpiresAtMs: int64(j.ExpiresAtMs), Attempt: uint32(j.Attempt),
		Kind: j.Kind, TraceID: nilIfEmpty(j.TraceID), SignatureScheme: j.SignatureScheme,
		SigningKeyID: j.SigningKeyID, Signature: nilIfEmpty(j.Signature), ToolCallID: j.ToolCallID,
		Principal: fromPrincipalJSON(j.Principal), unknown: nilIfEmpty(j.UnknownFields),
	}, nil
}

func refUnmarshalResultJSON(data []byte) (Result, error) {
	var j resultJSON
	if err := refDecodeStrictJSON(data, &j); err != nil {
		return Result{}, fmt.Errorf("toolreg: decoding ToolResult JSON: %w", err)
	}
	if err := checkUnknownFields(msgToolResult, j.UnknownFields); err != nil {
		return Result{}, err
	}
	return Result{
		IntentID: j.IntentID, EntityKey: nilIfEmpty(j.EntityKey), Seq: int64(j.Seq), Status: j.Status,
		Payload: nilIfEmpty(j.Payload), ErrorMessage: j.ErrorMessage, CompletedAtMs: int64(j.CompletedAtMs),
		unknown: nilIfEmpty(j.UnknownFields),
	}, nil
}

func refMarshalIntentJSON(in Intent) ([]byte, error) {
	if err := in.checkUTF8(); err != nil {
		return nil, err
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

func refMarshalResultJSON(r Result) ([]byte, error) {
	if err := r.checkUTF8(); err != nil {
		return nil, err
	}
	return json.Marshal(resultJSON{
		IntentID: r.IntentID, EntityKey: r.EntityKey, Seq: jsonInt64(r.Seq), Status: r.Status,
		Payload: r.Payload, ErrorMessage: r.ErrorMessage, CompletedAtMs: jsonInt64(r.CompletedAtMs),
		UnknownFields: r.unknown,
	})
}

func refDecodeStrictJSON(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
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
