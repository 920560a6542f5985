package intent

import (
	"encoding/base64"
	"strconv"
	"unicode/utf8"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/jsonscan"
)

// The JSON form is read and written on the hot path of durable JSONL Serve,
// one intent and one result a line, so its usual shapes have a fast path here:
// a scanner for this fixed, flat object and an encoder that appends it.
//
// The fast paths never decide anything the encoding/json paths in wirejson.go
// would decide otherwise. The decoder accepts only input the old decoder
// accepts and reads the same value from it (wirejson_fast_test.go fuzzes that
// against a copy of the old code, wirejson_ref_test.go); on anything else (an unknown or
// duplicate key, a key in another case, an escape it does not handle, a
// number with a fraction, a bad value of any kind) it gives up and the
// encoding/json path decides, so every error, and its text, is the old one.
// The encoder writes what encoding/json writes, byte for byte, and hands the
// rare strings it does not handle (control characters other than \n, \r, \t)
// to encoding/json.

// jsonScanner reads one JSON object from b, by the steps of internal/jsonscan
// (which accept only what encoding/json accepts, with its meaning) and this
// format's own: its integers, also quoted, its base64 bytes and its enums.
// Each method reports false when the fast path must give up.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) ws() { s.i = jsonscan.WS(s.b, s.i) }

func (s *jsonScanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *jsonScanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// object reads the whole input as one object, calling value for each key
// (plain ASCII without escapes) with the scanner at the key's value, which
// value must read. Only whitespace may follow the object.
func (s *jsonScanner) object(value func(key []byte) bool) bool {
	s.ws()
	var more, ok bool
	s.i, more, ok = jsonscan.Open(s.b, s.i, '{', '}')
	for ; more; s.i, more, ok = jsonscan.Next(s.b, s.i, '}') {
		var key []byte
		var isKey bool
		if key, s.i, isKey = jsonscan.Plain(s.b, s.i); !isKey {
			return false
		}
		if s.i, isKey = jsonscan.Colon(s.b, s.i); !isKey || !value(key) {
			return false
		}
	}
	s.ws()
	return ok && s.i == len(s.b)
}

// null reads the literal null, if it is next.
func (s *jsonScanner) null() (ok bool) {
	s.i, ok = jsonscan.Literal(s.b, s.i, "null")
	return ok
}

// str reads a string. v is the text; owned says whether it is a new slice
// (the string had escapes or non-ASCII text) or a part of the input.
func (s *jsonScanner) str() (v []byte, owned, ok bool) {
	v, s.i, owned, ok = jsonscan.Str(s.b, s.i)
	return v, owned, ok
}

// text reads a string field as a Go string.
func (s *jsonScanner) text() (_ string, ok bool) {
	var v []byte
	v, s.i, _, ok = jsonscan.Str(s.b, s.i)
	return string(v), ok
}

// digits reads 1 to 19 decimal digits (so the value fits a uint64).
func (s *jsonScanner) digits() (uint64, bool) {
	start := s.i
	var v uint64
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		v = v*10 + uint64(s.b[s.i]-'0')
		s.i++
		if s.i-start > 19 {
			return 0, false
		}
	}
	return v, s.i > start
}

// signedValue is v with its sign, if it fits an int64.
func signedValue(v uint64, neg bool) (int64, bool) {
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return int64(-v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// quotedInt reads a string of what strconv.ParseInt (signed) or ParseUint
// reads in base 10: an optional sign (signed only), then digits.
func (s *jsonScanner) quotedInt(signed bool) (uint64, bool, bool) {
	s.i++ // the quote
	neg := false
	if c := s.peek(); signed && (c == '+' || c == '-') {
		neg = c == '-'
		s.i++
	}
	v, ok := s.digits()
	if !ok || !s.eat('"') {
		return 0, false, false
	}
	return v, neg, true
}

// int64 reads what jsonInt64 parses: a JSON integer, [-]digits without
// leading zeros (a number such as 1.5 or 1e3 gives up), or a quoted one.
func (s *jsonScanner) int64() (int64, bool) {
	var v uint64
	var neg, ok bool
	if s.peek() == '"' {
		v, neg, ok = s.quotedInt(true)
	} else {
		v, neg, s.i, ok = jsonscan.Int(s.b, s.i)
	}
	if !ok {
		return 0, false
	}
	return signedValue(v, neg)
}

// uint32 reads what jsonUint32 parses, as int64 does, but unsigned: ParseUint
// refuses a sign, even on -0.
func (s *jsonScanner) uint32() (uint32, bool) {
	var v uint64
	var neg, ok bool
	if s.peek() == '"' {
		v, _, ok = s.quotedInt(false)
	} else {
		v, neg, s.i, ok = jsonscan.Int(s.b, s.i)
	}
	if !ok || neg || v > 1<<32-1 {
		return 0, false
	}
	return uint32(v), true
}

var isBase64 = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") {
		t[c] = true
	}
	return t
}()

// bytes reads a bytes field: a string of base64 with no escapes, decoded as
// encoding/json decodes a []byte. Empty is nil, as nilIfEmpty makes it.
func (s *jsonScanner) bytes() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) && isBase64[s.b[s.i]] {
		s.i++
	}
	raw := s.b[start:s.i]
	if !s.eat('"') {
		return nil, false
	}
	if len(raw) == 0 {
		return nil, true
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(raw)))
	n, err := base64.StdEncoding.Decode(out, raw)
	if err != nil {
		return nil, false
	}
	return nilIfEmpty(out[:n]), true
}

// enum reads an enum by wire name (name gives them, as parseEnum reads them)
// or by number, as a string of what strconv.ParseInt reads as an int32.
func (s *jsonScanner) enum(name func(int32) string) (int32, bool) {
	raw, i, ok := jsonscan.Plain(s.b, s.i) // a name or a number needs no escape
	if !ok {
		return 0, false
	}
	s.i = i
	for i := int32(0); ; i++ {
		n := name(i)
		if n == strconv.Itoa(int(i)) {
			break
		}
		if string(raw) == n {
			return i, true
		}
	}
	neg := false
	if len(raw) > 0 && (raw[0] == '+' || raw[0] == '-') {
		neg = raw[0] == '-'
		raw = raw[1:]
	}
	if len(raw) == 0 || len(raw) > 9 { // 9 digits fit an int32
		return 0, false
	}
	var v int32
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int32(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// principal reads the principal object, {"subject": ..., "scopes": [...]},
// as encoding/json reads a *principalJSON (no scopes is nil scopes). It
// gives up on a key it does not know or has seen, and on a null scope.
func (s *jsonScanner) principal() (*toolreg.Principal, bool) {
	p := &toolreg.Principal{}
	var seen [2]bool
	var more, ok bool
	s.i, more, ok = jsonscan.Open(s.b, s.i, '{', '}')
	for ; ok && more; s.i, more, ok = jsonscan.Next(s.b, s.i, '}') {
		var key []byte
		if key, s.i, ok = jsonscan.Plain(s.b, s.i); !ok {
			return nil, false
		}
		if s.i, ok = jsonscan.Colon(s.b, s.i); !ok {
			return nil, false
		}
		var f int
		switch string(key) {
		case "subject":
			f = 0
		case "scopes":
			f = 1
		default:
			return nil, false
		}
		if seen[f] {
			return nil, false
		}
		seen[f] = true
		if s.null() {
			continue
		}
		if f == 0 {
			if p.Subject, ok = s.text(); !ok {
				return nil, false
			}
			continue
		}
		var items bool
		s.i, items, ok = jsonscan.Open(s.b, s.i, '[', ']')
		for ; ok && items; s.i, items, ok = jsonscan.Next(s.b, s.i, ']') {
			var v string
			if v, ok = s.text(); !ok {
				return nil, false
			}
			p.Scopes = append(p.Scopes, v)
		}
		if !ok {
			return nil, false
		}
	}
	return p, ok
}

// unmarshalJSONFast reads data into in when it can, as UnmarshalJSON's
// encoding/json path would, and reports whether it did; in is unchanged
// when it did not.
func (in *Intent) unmarshalJSONFast(data []byte) bool {
	var x Intent
	var seen uint32
	s := jsonScanner{b: data}
	ok := s.object(func(key []byte) bool {
		var f int
		switch string(key) {
		case "intent_id":
			f = 1
		case "entity_key":
			f = 2
		case "seq":
			f = 3
		case "step_index":
			f = 4
		case "tool_name":
			f = 5
		case "args_json":
			f = 6
		case "created_at_ms":
			f = 7
		case "expires_at_ms":
			f = 8
		case "attempt":
			f = 9
		case "kind":
			f = 10
		case "trace_id":
			f = 11
		case "signature_scheme":
			f = 12
		case "signing_key_id":
			f = 13
		case "signature":
			f = 14
		case "unknown_fields":
			f = 15
		case "tool_call_id":
			f = 16
		case "principal":
			f = 17
		default:
			return false
		}
		if seen&(1<<f) != 0 { // encoding/json keeps the last, or not (null): let it say
			return false
		}
		seen |= 1 << f
		if s.null() { // the field stays zero, as each of its types reads null
			return true
		}
		var ok bool
		switch f {
		case 1:
			x.ID, ok = s.text()
		case 2:
			x.EntityKey, ok = s.bytes()
		case 3:
			x.Seq, ok = s.int64()
		case 4:
			x.StepIndex, ok = s.uint32()
		case 5:
			x.ToolName, ok = s.text()
		case 6:
			var v []byte
			var owned bool
			v, owned, ok = s.str()
			if len(v) > 0 {
				if !owned { // UnmarshalJSON keeps nothing of data
					v = append([]byte(nil), v...)
				}
				x.ArgsJSON = v
			}
		case 7:
			x.CreatedAtMs, ok = s.int64()
		case 8:
			x.ExpiresAtMs, ok = s.int64()
		case 9:
			x.Attempt, ok = s.uint32()
		case 10:
			var v int32
			v, ok = s.enum(func(i int32) string { return IntentKind(i).String() })
			x.Kind = IntentKind(v)
		case 11:
			x.TraceID, ok = s.bytes()
		case 12:
			var v int32
			v, ok = s.enum(func(i int32) string { return SignatureScheme(i).String() })
			x.SignatureScheme = SignatureScheme(v)
		case 13:
			x.SigningKeyID, ok = s.text()
		case 14:
			x.Signature, ok = s.bytes()
		case 15:
			x.unknown, ok = s.bytes()
		case 16:
			x.ToolCallID, ok = s.text()
		case 17:
			x.Principal, ok = s.principal()
		}
		return ok
	})
	if !ok || checkUnknownFields(msgToolIntent, x.unknown) != nil {
		return false
	}
	*in = x
	return true
}

// unmarshalJSONFast is Intent's, for a Result.
func (r *Result) unmarshalJSONFast(data []byte) bool {
	var x Result
	var seen uint32
	s := jsonScanner{b: data}
	ok := s.object(func(key []byte) bool {
		var f int
		switch string(key) {
		case "intent_id":
			f = 1
		case "entity_key":
			f = 2
		case "seq":
			f = 3
		case "status":
			f = 4
		case "payload":
			f = 5
		case "error_message":
			f = 6
		case "completed_at_ms":
			f = 7
		case "unknown_fields":
			f = 8
		default:
			return false
		}
		if seen&(1<<f) != 0 {
			return false
		}
		seen |= 1 << f
		if s.null() { // the field stays zero, as each of its types reads null
			return true
		}
		var ok bool
		switch f {
		case 1:
			x.IntentID, ok = s.text()
		case 2:
			x.EntityKey, ok = s.bytes()
		case 3:
			x.Seq, ok = s.int64()
		case 4:
			var v int32
			v, ok = s.enum(func(i int32) string { return Status(i).String() })
			x.Status = Status(v)
		case 5:
			x.Payload, ok = s.bytes()
		case 6:
			x.ErrorMessage, ok = s.text()
		case 7:
			x.CompletedAtMs, ok = s.int64()
		case 8:
			x.unknown, ok = s.bytes()
		}
		return ok
	})
	if !ok || checkUnknownFields(msgToolResult, x.unknown) != nil {
		return false
	}
	*r = x
	return true
}

// appendJSONString appends s as encoding/json writes a string (escaping
// HTML's <, > and &, and U+2028 and U+2029). s must be valid UTF-8 (the
// MarshalJSON methods check it first); ok is false for a control character
// other than \n, \r and \t, left to encoding/json.
func appendJSONString[T string | []byte](b []byte, s T) (_ []byte, ok bool) {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			if c == 0xe2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xa8 { // U+2028, U+2029
				b = append(b, s[start:i]...)
				b = append(b, `\u202`...)
				b = append(b, hex[s[i+2]&0xf])
				i += 3
				start = i
				continue
			}
			i++
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '<', '>', '&':
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			return b, false
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"'), true
}

// appendJSONBytes appends p as encoding/json writes a []byte: base64, or null
// when p is nil.
func appendJSONBytes(b, p []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, p)
	return append(b, '"')
}

// appendJSON appends the intent's JSON form as encoding/json writes its
// intentJSON; ok is false when a string needs encoding/json.
func (in *Intent) appendJSON(b []byte) (_ []byte, ok bool) {
	ok1, ok2, ok3, ok4, ok5, ok6, ok7 := true, true, true, true, true, true, true
	b = append(b, `{"intent_id":`...)
	b, ok1 = appendJSONString(b, in.ID)
	b = append(b, `,"entity_key":`...)
	b = appendJSONBytes(b, in.EntityKey)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, in.Seq, 10)
	b = append(b, `,"step_index":`...)
	b = strconv.AppendUint(b, uint64(in.StepIndex), 10)
	b = append(b, `,"tool_name":`...)
	b, ok2 = appendJSONString(b, in.ToolName)
	b = append(b, `,"args_json":`...)
	b, ok3 = appendJSONString(b, []byte(in.ArgsJSON))
	b = append(b, `,"created_at_ms":`...)
	b = strconv.AppendInt(b, in.CreatedAtMs, 10)
	b = append(b, `,"expires_at_ms":`...)
	b = strconv.AppendInt(b, in.ExpiresAtMs, 10)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendUint(b, uint64(in.Attempt), 10)
	b = append(b, `,"kind":`...)
	b, ok4 = appendJSONString(b, in.Kind.String())
	if len(in.TraceID) > 0 {
		b = append(b, `,"trace_id":`...)
		b = appendJSONBytes(b, in.TraceID)
	}
	if in.SignatureScheme != 0 {
		b = append(b, `,"signature_scheme":`...)
		b, ok5 = appendJSONString(b, in.SignatureScheme.String())
	}
	if in.SigningKeyID != "" {
		b = append(b, `,"signing_key_id":`...)
		b, ok6 = appendJSONString(b, in.SigningKeyID)
	}
	if len(in.Signature) > 0 {
		b = append(b, `,"signature":`...)
		b = appendJSONBytes(b, in.Signature)
	}
	if in.ToolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b, ok7 = appendJSONString(b, in.ToolCallID)
	}
	ok8 := true
	if p := in.Principal; p != nil {
		b, ok8 = appendPrincipalJSON(append(b, `,"principal":`...), p)
	}
	if len(in.unknown) > 0 {
		b = append(b, `,"unknown_fields":`...)
		b = appendJSONBytes(b, in.unknown)
	}
	return append(b, '}'), ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && ok8
}

// appendPrincipalJSON appends p as encoding/json writes its *principalJSON.
func appendPrincipalJSON(b []byte, p *toolreg.Principal) (_ []byte, ok bool) {
	ok = true
	b = append(b, '{')
	if p.Subject != "" {
		b = append(b, `"subject":`...)
		b, ok = appendJSONString(b, p.Subject)
	}
	if len(p.Scopes) > 0 {
		if p.Subject != "" {
			b = append(b, ',')
		}
		b = append(b, `"scopes":[`...)
		for i, sc := range p.Scopes {
			if i > 0 {
				b = append(b, ',')
			}
			var okScope bool
			b, okScope = appendJSONString(b, sc)
			ok = ok && okScope
		}
		b = append(b, ']')
	}
	return append(b, '}'), ok
}

func (in *Intent) jsonSizeHint() int {
	return 256 + len(in.ID) + len(in.ToolName) + len(in.SigningKeyID) + len(in.ToolCallID) + len(in.ArgsJSON) + len(in.ArgsJSON)/2 +
		base64.StdEncoding.EncodedLen(len(in.EntityKey)) + base64.StdEncoding.EncodedLen(len(in.TraceID)) +
		base64.StdEncoding.EncodedLen(len(in.Signature)) + base64.StdEncoding.EncodedLen(len(in.unknown)) +
		principalSizeHint(in.Principal)
}

func principalSizeHint(p *toolreg.Principal) int {
	if p == nil {
		return 0
	}
	n := 40 + len(p.Subject)
	for _, s := range p.Scopes {
		n += 4 + len(s)
	}
	return n
}

// appendJSON is Intent's, for a Result and its resultJSON.
func (r *Result) appendJSON(b []byte) (_ []byte, ok bool) {
	ok1, ok2, ok3 := true, true, true
	b = append(b, `{"intent_id":`...)
	b, ok1 = appendJSONString(b, r.IntentID)
	b = append(b, `,"entity_key":`...)
	b = appendJSONBytes(b, r.EntityKey)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	b = append(b, `,"status":`...)
	b, ok2 = appendJSONString(b, r.Status.String())
	if len(r.Payload) > 0 {
		b = append(b, `,"payload":`...)
		b = appendJSONBytes(b, r.Payload)
	}
	if r.ErrorMessage != "" {
		b = append(b, `,"error_message":`...)
		b, ok3 = appendJSONString(b, r.ErrorMessage)
	}
	b = append(b, `,"completed_at_ms":`...)
	b = strconv.AppendInt(b, r.CompletedAtMs, 10)
	if len(r.unknown) > 0 {
		b = append(b, `,"unknown_fields":`...)
		b = appendJSONBytes(b, r.unknown)
	}
	return append(b, '}'), ok1 && ok2 && ok3
}

func (r *Result) jsonSizeHint() int {
	return 160 + len(r.IntentID) + len(r.ErrorMessage) + len(r.ErrorMessage)/4 +
		base64.StdEncoding.EncodedLen(len(r.EntityKey)) + base64.StdEncoding.EncodedLen(len(r.Payload)) +
		base64.StdEncoding.EncodedLen(len(r.unknown))
}
