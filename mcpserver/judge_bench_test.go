package mcpserver

import (
	"strings"
	"testing"
)

// BenchmarkJudgeLine measures what LineTransport does to each line before
// the SDK decodes it: a tools/call with small arguments, and one with 64 KiB
// of them, where a step that copies the params shows.
func BenchmarkJudgeLine(b *testing.B) {
	for _, tt := range []struct{ name, args string }{
		{"args=small", `{"amount":5}`},
		{"args=64KiB", `{"note":"` + strings.Repeat("a", 64<<10) + `"}`},
	} {
		line := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"charge","arguments":` + tt.args + `}}`)
		b.Run(tt.name, func(b *testing.B) {
			c := &lineConn{out: &bufCloser{}, maxLine: 1 << 20, maxDepth: 64}
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				if c.judge(line, false) == nil {
					b.Fatal("the line was refused")
				}
			}
		})
	}
}
