package redisstore

import (
	"strings"
	"testing"
)

func TestKeySlot(t *testing.T) {
	t.Parallel()
	if got := crc16("123456789"); got != 0x31c3 {
		t.Fatalf(`crc16("123456789") = %#x, want the cluster spec's check value 0x31c3`, got)
	}
	tests := []struct {
		name string
		key  string
		want int
	}{
		// Slots from the CLUSTER KEYSLOT page of the Redis docs.
		{"a key without a tag hashes whole", "somekey", 11058},
		{"a key with a tag hashes the tag", "foo{hash_tag}", 2515},
		// The hash tag examples of the cluster spec.
		{"keys with one tag share its slot", "{user1000}.following", keySlot("user1000")},
		{"an empty first tag means the whole key", "foo{}{bar}", int(crc16("foo{}{bar}")) % 16384},
		{"the tag runs from the first { to the first } after it", "foo{{bar}}zap", keySlot("{bar")},
		{"only the first tag counts", "foo{bar}{zap}", keySlot("bar")},
		{"a { without a } after it means the whole key", "foo}{bar", int(crc16("foo}{bar")) % 16384},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keySlot(tt.key); got != tt.want {
				t.Fatalf("keySlot(%q) = %d, want %d", tt.key, got, tt.want)
			}
		})
	}
}

// FuzzKeysShareASlot checks the key layout for any prefix and intent id: the
// store refuses the prefix (exactly when its first tag is empty), or the
// record and attempt marker of the intent share a slot, and a marker is never
// an intent's record. Without a tag in the prefix, an intent's slot does not
// depend on the prefix: intents spread by id.
func FuzzKeysShareASlot(f *testing.F) {
	for _, seed := range [][2]string{
		{"toolreg:effector:dedup:", "6029f2e5-6873-509a-9cf7-97d4faa638af"},
		{"", ""}, {"p:", "{"}, {"p:", "}"}, {"p:", "{}"}, {"p:", "a}b{c}"},
		{"{tenant}:", "x"}, {"a{", "}"}, {"a{b", ""}, {"}", "{"}, {"{}", "x"}, {"x{}{y}", "z"}, {"{{}", "i"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, prefix, id string) {
		s := New(nil, WithKeyPrefix(prefix))
		i := strings.IndexByte(prefix, '{')
		emptyTag := i >= 0 && strings.HasPrefix(prefix[i:], "{}")
		if (s.err != nil) != emptyTag {
			t.Fatalf("prefix %q: refused = %v, want %v (an empty first tag)", prefix, s.err, emptyTag)
		}
		if s.err != nil {
			return
		}
		ks := s.keys(id)
		rec, marker := ks[0], ks[1]
		if !strings.HasPrefix(rec, prefix) {
			t.Fatalf("record key %q does not start with the prefix %q", rec, prefix)
		}
		if a, b := keySlot(rec), keySlot(marker); a != b {
			t.Fatalf("prefix %q, id %q: record %q in slot %d, marker %q in slot %d", prefix, id, rec, a, marker, b)
		}
		if strings.HasSuffix(marker, "}") {
			t.Fatalf("marker %q ends in }, so it may be the record of another intent", marker)
		}
		if i < 0 {
			if a, b := keySlot(rec), keySlot(New(nil).key(id)); a != b {
				t.Fatalf("id %q: slot %d under prefix %q, %d under the default prefix, want the id to decide", id, a, prefix, b)
			}
		}
	})
}
