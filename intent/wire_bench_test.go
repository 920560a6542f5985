package intent_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/beam-agents/toolreg/intent"
)

// Each toolreg benchmark is compared, in the same run, with protobuf-go doing
// the same job on a dynamic message of the same descriptor (the */protobuf-go
// sub-benchmarks): the reference encoder the tests check our bytes against.

func BenchmarkIntentMarshalBinary(b *testing.B) {
	benchMarshalBinary(b, "tool_intent_signed.bin", new(intent.Intent), intentDesc)
}

func BenchmarkResultMarshalBinary(b *testing.B) {
	benchMarshalBinary(b, "tool_result.bin", new(intent.Result), resultDesc)
}

func BenchmarkIntentUnmarshalBinary(b *testing.B) {
	benchUnmarshalBinary(b, "tool_intent_future_field.bin", new(intent.Intent), intentDesc)
}

func BenchmarkResultUnmarshalBinary(b *testing.B) {
	benchUnmarshalBinary(b, "tool_result.bin", new(intent.Result), resultDesc)
}

// benchMarshalBinary encodes the fixture's message, decoded once into v.
func benchMarshalBinary(b *testing.B, fixture string, v wireMessage, desc protoreflect.MessageDescriptor) {
	raw := readFixture(b, fixture)
	b.Run("toolreg", func(b *testing.B) {
		if err := v.UnmarshalBinary(raw); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.MarshalBinary(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("protobuf-go", func(b *testing.B) {
		m := dynamicpb.NewMessage(desc)
		if err := proto.Unmarshal(raw, m); err != nil {
			b.Fatal(err)
		}
		opts := proto.MarshalOptions{Deterministic: true}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := opts.Marshal(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchUnmarshalBinary decodes the fixture into v, which each decode replaces
// whole, and into a fresh dynamic message.
func benchUnmarshalBinary(b *testing.B, fixture string, v wireMessage, desc protoreflect.MessageDescriptor) {
	raw := readFixture(b, fixture)
	b.Run("toolreg", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := v.UnmarshalBinary(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("protobuf-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m := dynamicpb.NewMessage(desc)
			if err := proto.Unmarshal(raw, m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkVerifyHMAC is the cost the effector pays per intent in "require"
// mode, on top of decoding it.
func BenchmarkVerifyHMAC(b *testing.B) {
	in := decodeIntent(b, readFixture(b, "tool_intent_signed.bin"))
	b.ReportAllocs()
	for b.Loop() {
		if err := in.VerifyHMAC(goldenKeys); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIntentID(b *testing.B) {
	key := []byte("entity-1")
	b.ReportAllocs()
	for b.Loop() {
		_ = intent.IntentID(key, 7, 2)
	}
}
