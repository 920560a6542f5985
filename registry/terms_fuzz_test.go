package registry

import (
	"slices"
	"testing"
)

// scanTerms collects what termScanner gives for text.
func scanTerms(sc *termScanner, text string, compound bool) []string {
	var out []string
	sc.scan(text, compound, func(b []byte) { out = append(out, string(b)) })
	return out
}

// FuzzTermScanner: the index's allocation-free scanner gives the terms of
// appendTerms, its reference (what queries use), as a multiset.
func FuzzTermScanner(f *testing.F) {
	for _, s := range []string{"refund_order", "HTTPServer oauth2Token", "open PRs, URLs and listUserIDs", "Invoices, queries; statuses", "Café DÉJÀ-VU",
		"bad\xffutf8", "refund\xff_order\xc3x", "aB\xe2\x82cD-1\xff2", "the of a", "__a__b--", "İstanbul ǅemal ΣΊΣΥΦΟΣ", "x_y-Zz9Q", "", "uses causes dishes",
		"1-10 days", "100_000", "v1-10", "10-a", "2fa oauth2"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	sc := &termScanner{}
	f.Fuzz(func(t *testing.T, text string, compound bool) {
		want := appendTerms(nil, text, compound)
		got := scanTerms(sc, text, compound)
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("scan(%q, %v) = %q, appendTerms gives %q", text, compound, got, want)
		}
	})
}
