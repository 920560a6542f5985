package registry_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/registry"
)

// FuzzSearch: any query text, limit and filters give an answer within the
// limit, every match scored and kept by the filters, best first, ties in
// registration order, the same answer twice.
func FuzzSearch(f *testing.F) {
	r := corpus(f)
	order := map[string]int{}
	for i, t := range r.Tools() {
		order[t.Name()] = i
	}
	for _, s := range []string{"", "refund a payment", "trackShipment", "lookup_order", "\x00\xff", "ÉCHANGE élevé", "the of", "a-b_c-D", "   ", "İstanbul ǅemal"} {
		f.Add(s, 5, false, "")
		f.Add(s, 0, true, "billing")
	}
	f.Fuzz(func(t *testing.T, text string, limit int, readOnly bool, tag string) {
		q := registry.Query{Text: text, Limit: limit, ReadOnly: readOnly}
		if tag != "" {
			q.Tags = []string{tag}
		}
		got := r.Search(q)
		want := limit
		if want <= 0 {
			want = registry.DefaultSearchLimit
		}
		if len(got) > want {
			t.Fatalf("%d matches, limit %d", len(got), want)
		}
		for i, m := range got {
			if readOnly && m.Tool.SideEffect() {
				t.Fatalf("read-only search matched %s", m.Tool.Name())
			}
			if tag != "" && !slices.ContainsFunc(m.Tool.Spec().Tags, func(s string) bool { return strings.EqualFold(s, tag) }) {
				t.Fatalf("tag %q search matched %s (tags %v)", tag, m.Tool.Name(), m.Tool.Spec().Tags)
			}
			if i > 0 {
				prev := got[i-1]
				if m.Score > prev.Score || (m.Score == prev.Score && order[m.Tool.Name()] < order[prev.Tool.Name()]) {
					t.Fatalf("match %d (%s %v) out of order after %s %v", i, m.Tool.Name(), m.Score, prev.Tool.Name(), prev.Score)
				}
			}
		}
		again := r.Search(q)
		if !slices.EqualFunc(got, again, func(a, b registry.Match) bool { return a.Tool == b.Tool && a.Score == b.Score }) {
			t.Fatalf("the same search answered %v then %v", names(got), names(again))
		}
	})
}
