package argcheck

import (
	"bytes"
	"strconv"
	"testing"
	"unicode/utf8"
)

// referenceCanonicalString is AppendCanonicalString as first written: one
// byte or rune at a time, each case spelled out. The run-copying version must
// give its bytes for every input.
func referenceCanonicalString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

func FuzzAppendCanonicalString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"u\o`, "tab\tnl\ncr\r\b\f\x00\x1f\x7f", "remboursé", "日本語 \u2028", "bad\xffutf8\xc3", "\xed\xa0\x80", "😀x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		prefix := []byte("p:")
		got := AppendCanonicalString(bytes.Clone(prefix), s)
		want := referenceCanonicalString(bytes.Clone(prefix), s)
		if !bytes.Equal(got, want) {
			t.Fatalf("AppendCanonicalString(%q) = %q, want %q", s, got, want)
		}
		strict, ok := appendQuoted(bytes.Clone(prefix), s, true)
		if ok != utf8.ValidString(s) {
			t.Fatalf("appendQuoted(%q, strict) ok = %v, want %v (whether it is valid UTF-8)", s, ok, !ok)
		}
		if ok && !bytes.Equal(strict, want) {
			t.Fatalf("appendQuoted(%q, strict) = %q, want %q", s, strict, want)
		}
	})
}

func BenchmarkAppendCanonicalString(b *testing.B) {
	for _, s := range []string{"rf-o-1", "remboursé", "Your refund of 30 EUR for order o-1 is on its way.\nThanks!"} {
		for _, impl := range []struct {
			name string
			fn   func([]byte, string) []byte
		}{{"reference", referenceCanonicalString}, {"runs", AppendCanonicalString}} {
			b.Run(impl.name+"/len="+strconv.Itoa(len(s)), func(b *testing.B) {
				buf := make([]byte, 0, 256)
				for b.Loop() {
					buf = impl.fn(buf[:0], s)
				}
			})
		}
	}
}
