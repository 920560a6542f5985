package intent

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/beam-agents/toolreg"
)

// The three ways an intent can fail verification. A *SignatureError wraps
// exactly one of them, so errors.Is tells them apart: the effector dead-letters
// each under its own reason.
var (
	// ErrUnsigned: the intent carries no signature at all.
	ErrUnsigned = errors.New("intent is not signed")
	// ErrUnknownKey: the intent is signed with a key id the verifier does not hold.
	ErrUnknownKey = errors.New("intent is signed with an unknown key id")
	// ErrBadSignature: the signature does not match the intent's bytes under
	// its key, or its scheme is one this version cannot check.
	ErrBadSignature = errors.New("intent signature does not match")
)

// SignatureError reports an intent that failed VerifyHMAC. Err is one of
// ErrUnsigned, ErrUnknownKey and ErrBadSignature.
type SignatureError struct {
	IntentID string
	KeyID    string // the signing_key_id the intent names; "" when unsigned
	Err      error
	Detail   string // more about a bad signature, such as an unsupported scheme
}

func (e *SignatureError) Error() string {
	switch e.Err {
	case ErrUnsigned:
		return fmt.Sprintf("toolreg: intent %q is not signed: the producer must sign it (Intent.SignHMAC), or the effector must not require signatures", e.IntentID)
	case ErrUnknownKey:
		return fmt.Sprintf("toolreg: intent %q is signed with key id %q, which the verifier does not hold: add that key to the verifier's key set", e.IntentID, e.KeyID)
	}
	msg := fmt.Sprintf("toolreg: intent %q: signature does not match (key id %q)", e.IntentID, e.KeyID)
	if e.Detail != "" {
		return msg + ": " + e.Detail
	}
	return msg + ": the intent was changed after it was signed, or signed with another key under that id"
}

func (e *SignatureError) Unwrap() error { return e.Err }

func (e *SignatureError) Is(target error) bool { return target == toolreg.ErrTool }

// SignHMAC signs in with HMAC-SHA256 under keyID, as beam-agents v1 does: it
// sets SignatureScheme, SigningKeyID and Signature, the MAC of the intent's
// serialization with those three fields left out and its unknown fields kept.
// Sign last: changing any other field afterwards breaks the signature.
func (in *Intent) SignHMAC(keyID string, key []byte) error {
	if len(key) == 0 {
		return fmt.Errorf("toolreg: signing intent %q: the key for id %q is empty: pass the HMAC key itself, the bytes the effector holds under that id", in.ID, keyID)
	}
	mac, err := in.hmacSHA256(key)
	if err != nil {
		return err
	}
	in.SignatureScheme = SchemeHMACSHA256
	in.SigningKeyID = keyID
	in.Signature = mac
	return nil
}

// VerifyHMAC checks in's signature against keys, a key set by key id. It
// returns nil when in is signed with HMAC-SHA256 under a key id in keys and
// the MAC matches; otherwise a *SignatureError wrapping ErrUnsigned,
// ErrUnknownKey or ErrBadSignature. An empty key counts as absent.
func (in *Intent) VerifyHMAC(keys map[string][]byte) error {
	fail := func(err error, detail string) error {
		return &SignatureError{IntentID: in.ID, KeyID: in.SigningKeyID, Err: err, Detail: detail}
	}
	switch {
	case in.SignatureScheme == SchemeUnspecified && len(in.Signature) == 0 && in.SigningKeyID == "":
		return fail(ErrUnsigned, "")
	case in.SignatureScheme != SchemeHMACSHA256:
		return fail(ErrBadSignature, fmt.Sprintf("signature scheme %s is not supported: want HMAC_SHA256", in.SignatureScheme))
	}
	key := keys[in.SigningKeyID]
	if len(key) == 0 {
		return fail(ErrUnknownKey, "")
	}
	want, err := in.hmacSHA256(key)
	if err != nil {
		return fail(ErrBadSignature, err.Error())
	}
	if !hmac.Equal(want, in.Signature) {
		return fail(ErrBadSignature, "")
	}
	return nil
}

func (in *Intent) hmacSHA256(key []byte) ([]byte, error) {
	body, err := in.appendWire(make([]byte, 0, in.wireSize(false)), false)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return m.Sum(nil), nil
}
