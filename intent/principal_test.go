package intent_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/intent"
)

// principalIntent is a staged intent with a principal, as runner stages one.
func principalIntent(p *toolreg.Principal) *intent.Intent {
	return &intent.Intent{
		ID: intent.IntentID([]byte("ticket-42"), 7, 0), EntityKey: []byte("ticket-42"), Seq: 7,
		ToolName: "refund_order", ArgsJSON: json.RawMessage(`{"amount":20}`),
		CreatedAtMs: t0, ExpiresAtMs: t0 + 60000, Kind: intent.KindTool, Principal: p,
	}
}

func TestThePrincipalRoundTripsInBothForms(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		p    *toolreg.Principal
	}{
		{"no principal", nil},
		{"the anonymous principal, written as an empty message", &toolreg.Principal{}},
		{"a subject alone", &toolreg.Principal{Subject: "ana@example.test"}},
		{"scopes alone, in their order, an empty one kept", &toolreg.Principal{Scopes: []string{"orders:refund", "", "orders:read"}}},
		{"both, with text JSON escapes", &toolreg.Principal{Subject: "é <ana> & \"bo\"\n", Scopes: []string{"a", "b\u2028"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := principalIntent(c.p)
			wire, err := in.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var back intent.Intent
			if err := back.UnmarshalBinary(wire); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Principal, c.p) {
				t.Fatalf("binary round trip: principal %#v, want %#v", back.Principal, c.p)
			}
			again, _ := back.MarshalBinary()
			if !bytes.Equal(again, wire) {
				t.Fatalf("re-encoding changed the bytes:\n%x\n%x", again, wire)
			}
			j, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			var fromJSON intent.Intent
			if err := json.Unmarshal(j, &fromJSON); err != nil {
				t.Fatalf("reading %s: %v", j, err)
			}
			if !reflect.DeepEqual(fromJSON.Principal, c.p) {
				t.Fatalf("JSON %s reads back principal %#v, want %#v", j, fromJSON.Principal, c.p)
			}
			if b, _ := fromJSON.MarshalBinary(); !bytes.Equal(b, wire) {
				t.Fatalf("JSON %s reads back to other wire bytes", j)
			}
			if c.p == nil && bytes.Contains(j, []byte("principal")) {
				t.Fatalf("an intent without a principal writes one: %s", j)
			}
		})
	}
}

// The signature covers the principal: an intent signed for one caller
// cannot be given another's authority, nor stripped of its principal.
func TestTheSignatureCoversThePrincipal(t *testing.T) {
	t.Parallel()
	in := principalIntent(&toolreg.Principal{Subject: "ana", Scopes: []string{"orders:read"}})
	if err := in.SignHMAC("golden-k1", goldenKey); err != nil {
		t.Fatal(err)
	}
	if err := in.VerifyHMAC(goldenKeys); err != nil {
		t.Fatalf("signed intent does not verify: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*intent.Intent)
	}{
		{"a scope added", func(in *intent.Intent) { in.Principal.Scopes = append(in.Principal.Scopes, "orders:refund") }},
		{"another subject", func(in *intent.Intent) { in.Principal.Subject = "bob" }},
		{"the principal removed", func(in *intent.Intent) { in.Principal = nil }},
		{"an empty principal instead", func(in *intent.Intent) { in.Principal = &toolreg.Principal{} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			forged := *in
			p := *in.Principal
			p.Scopes = append([]string(nil), p.Scopes...)
			forged.Principal = &p
			c.edit(&forged)
			if err := forged.VerifyHMAC(goldenKeys); !errors.Is(err, intent.ErrBadSignature) {
				t.Fatalf("VerifyHMAC of the forged intent = %v, want ErrBadSignature", err)
			}
		})
	}
	if in.ID != principalIntent(nil).ID {
		t.Fatal("the principal changed the intent id, which is the position's alone")
	}
}

// A reader of the beam-agents v1 contract alone (protobuf-go with fields 1
// to 14, as the Python runtime is) keeps field 1001 as an unknown field and
// writes it back where toolreg writes it: the bytes, and so the signature,
// survive a trip through it.
func TestAContractOnlyReaderKeepsThePrincipal(t *testing.T) {
	t.Parallel()
	in := principalIntent(&toolreg.Principal{Subject: "ana", Scopes: []string{"orders:refund"}})
	if err := in.SignHMAC("golden-k1", goldenKey); err != nil {
		t.Fatal(err)
	}
	wire, _ := in.MarshalBinary()
	assertSameAsProtobufGo(t, intentDesc, wire)
	m := dynamicpb.NewMessage(contractIntentDesc)
	if err := proto.Unmarshal(wire, m); err != nil {
		t.Fatal(err)
	}
	if len(m.GetUnknown()) == 0 {
		t.Fatal("protobuf-go with the v1 fields knows field 1001: the test's descriptor is not the contract's")
	}
	through, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	var back intent.Intent
	if err := back.UnmarshalBinary(through); err != nil {
		t.Fatal(err)
	}
	if err := back.VerifyHMAC(goldenKeys); err != nil {
		t.Fatalf("after a trip through a contract-only reader: %v", err)
	}
	if back.Principal == nil || back.Principal.Subject != "ana" {
		t.Fatalf("principal after the trip: %#v", back.Principal)
	}
}

// protobuf-go, told field 1001 is the message the wire.go comment says,
// reads the principal toolreg wrote.
func TestProtobufGoReadsThePrincipalAsDocumented(t *testing.T) {
	t.Parallel()
	str := descriptorpb.FieldDescriptorProto_TYPE_STRING
	fd := &descriptorpb.FileDescriptorProto{
		Name: proto.String("toolreg_ext_test.proto"), Package: proto.String("toolreg.v1"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Principal"), Field: []*descriptorpb.FieldDescriptorProto{
				{Name: proto.String("subject"), Number: proto.Int32(1), Type: str.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()},
				{Name: proto.String("scopes"), Number: proto.Int32(2), Type: str.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()},
			}},
			{Name: proto.String("Ext"), Field: []*descriptorpb.FieldDescriptorProto{
				{Name: proto.String("principal"), Number: proto.Int32(1001), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(),
					TypeName: proto.String(".toolreg.v1.Principal"), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()},
			}},
		},
	}
	f, err := protodesc.NewFile(fd, nil)
	if err != nil {
		t.Fatal(err)
	}
	ext := f.Messages().ByName("Ext")
	wire, _ := principalIntent(&toolreg.Principal{Subject: "ana", Scopes: []string{"a", "b"}}).MarshalBinary()
	m := dynamicpb.NewMessage(ext)
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(wire, m); err != nil {
		t.Fatal(err)
	}
	p := m.Get(ext.Fields().ByName("principal")).Message()
	pd := f.Messages().ByName("Principal")
	scopes := p.Get(pd.Fields().ByName("scopes")).List()
	if got := p.Get(pd.Fields().ByName("subject")).String(); got != "ana" || scopes.Len() != 2 || scopes.Get(0).String() != "a" || scopes.Get(1).String() != "b" {
		t.Fatalf("protobuf-go reads subject %q and %d scopes", got, scopes.Len())
	}
}

// A principal is authority, and is read only as it was written: a field of
// it this version does not know, text that is not UTF-8, or two principals
// refuse the intent (where a protobuf reader would keep the field, or merge
// the two). Field 1001 of another wire type is no principal: it is kept as
// an unknown field, and the intent carries none, so it holds no scope.
func TestAPrincipalIsReadOnlyAsWritten(t *testing.T) {
	t.Parallel()
	base, _ := principalIntent(nil).MarshalBinary()
	nested := func(b []byte, build func(b []byte) []byte) []byte {
		b = protowire.AppendTag(bytes.Clone(b), 1001, protowire.BytesType)
		return protowire.AppendBytes(b, build(nil))
	}
	subject := func(b []byte) []byte {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		return protowire.AppendString(b, "ana")
	}
	for _, c := range []struct {
		name string
		wire []byte
	}{
		{"a field of the principal it does not know", nested(base, func(b []byte) []byte {
			b = protowire.AppendTag(subject(b), 3, protowire.VarintType)
			return protowire.AppendVarint(b, 1)
		})},
		{"a subject of the wrong wire type", nested(base, func(b []byte) []byte {
			b = protowire.AppendTag(b, 1, protowire.VarintType)
			return protowire.AppendVarint(b, 7)
		})},
		{"a scope that is not UTF-8", nested(base, func(b []byte) []byte {
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			return protowire.AppendBytes(b, []byte{0xff})
		})},
		{"two principals", nested(nested(base, subject), subject)},
	} {
		t.Run(c.name+" refuses the intent", func(t *testing.T) {
			assertSameAsProtobufGo(t, intentDesc, c.wire)
			var we *intent.WireError
			if err := new(intent.Intent).UnmarshalBinary(c.wire); !errors.As(err, &we) || we.Field != "principal" {
				t.Fatalf("UnmarshalBinary = %v; want a *WireError on principal", err)
			}
		})
	}
	varint := protowire.AppendVarint(protowire.AppendTag(bytes.Clone(base), 1001, protowire.VarintType), 1)
	var in intent.Intent
	if err := in.UnmarshalBinary(varint); err != nil || in.Principal != nil {
		t.Fatalf("field 1001 as a varint: %v, principal %#v; want it kept as unknown, no principal", err, in.Principal)
	}
	if again, _ := in.MarshalBinary(); !bytes.Equal(again, varint) {
		t.Fatalf("re-encoded %x, want the bytes as read %x", again, varint)
	}
	assertSameAsProtobufGo(t, intentDesc, varint)
}

func TestAPrincipalThatIsNotUTF8IsRefusedWhenWritten(t *testing.T) {
	t.Parallel()
	for _, p := range []*toolreg.Principal{{Subject: "\xff"}, {Scopes: []string{"ok", "\xfe"}}} {
		var we *intent.WireError
		if _, err := principalIntent(p).MarshalBinary(); !errors.As(err, &we) || we.Field != "principal" {
			t.Errorf("MarshalBinary of principal %q = %v, want a *WireError naming principal", p, err)
		}
	}
}
