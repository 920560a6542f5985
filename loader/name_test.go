package loader

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg"
)

// validName is schema.cue's two name patterns, written as a loop: it must
// agree with them on every name. The patterns are read from schema.cue
// itself, so a change there that validName misses fails here.
func TestValidNameIsSchemaCUEsPatterns(t *testing.T) {
	t.Parallel()
	param := schemaPattern(t, `#ParamName: =~"`)
	tool := schemaPattern(t, `name!: =~"`)
	names := []string{"", "a", "customer_id", "a.b", "a-b", "A9_", ".", "-", "é", "a b", "a\n", "a/b", "a$", "a:b",
		strings.Repeat("x", 64), strings.Repeat("x", 65), strings.Repeat(".", 64), "a\x00", "ℹ", "a.b.c-d_e"}
	for c := range 256 {
		names = append(names, string(rune(c)), "x"+string([]byte{byte(c)}))
	}
	for _, n := range names {
		if got, want := validName(n, true), param.MatchString(n); got != want {
			t.Errorf("validName(%q, param) = %v, #ParamName says %v", n, got, want)
		}
		if got, want := validName(n, false), tool.MatchString(n); got != want {
			t.Errorf("validName(%q, tool) = %v, the tool name pattern says %v", n, got, want)
		}
	}
}

func TestWriteQuotedIsStrconvQuote(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a", "customer_id", `a"b`, `a\b`, "a\nb", "é", "\x7f", "\x1f", "tab\t", "ℹ x", "~s", "\xff"} {
		var b strings.Builder
		writeQuoted(&b, s)
		if got, want := b.String(), strconv.Quote(s); got != want {
			t.Errorf("writeQuoted(%q) = %s, want %s", s, got, want)
		}
	}
}

// schemaPattern compiles the pattern schema.cue writes after prefix.
func schemaPattern(t *testing.T, prefix string) *regexp.Regexp {
	t.Helper()
	src := toolreg.SchemaCUE()
	i := strings.Index(src, prefix)
	if i < 0 || strings.Count(src, prefix) != 1 {
		t.Fatalf("schema.cue has %d %s ... lines, want one", strings.Count(src, prefix), prefix)
	}
	rest := src[i+len(prefix)-1:]
	lit := rest[:strings.IndexByte(rest, '\n')]
	p, err := strconv.Unquote(lit)
	if err != nil {
		t.Fatalf("schema.cue pattern %s: %v", lit, err)
	}
	return regexp.MustCompile(p)
}
