package registry

import (
	"fmt"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg"
)

// A registry that is never searched builds no index: Register costs what it
// did before search existed. The first Search indexes every tool once; later
// ones index only the tools registered since.
func TestTheIndexIsBuiltOnTheFirstSearchOnly(t *testing.T) {
	t.Parallel()
	r := New()
	for i := range 100 {
		if err := r.Register(toolreg.NewTool(&toolreg.Spec{Name: fmt.Sprintf("t%d", i), Description: "Fetch a report."})); err != nil {
			t.Fatal(err)
		}
	}
	if r.search.n != 0 || r.search.ids != nil {
		t.Fatalf("Register built an index of %d tools", r.search.n)
	}
	r.Search(Query{Text: "report"})
	if r.search.n != 100 || len(r.search.postingsOf("report")) != 100 {
		t.Fatalf("after a search the index holds %d tools, %d postings of report; want 100, 100", r.search.n, len(r.search.postingsOf("report")))
	}
	r.Search(Query{Text: "report"})
	if got := len(r.search.postingsOf("report")); got != 100 {
		t.Fatalf("a second search re-indexed: %d postings of report", got)
	}
	if err := r.Register(toolreg.NewTool(&toolreg.Spec{Name: "late", Description: "A late report."})); err != nil {
		t.Fatal(err)
	}
	r.Search(Query{Text: "report"})
	if got := len(r.search.postingsOf("report")); got != 101 || r.search.n != 101 {
		t.Fatalf("after a late Register: %d tools, %d postings of report; want 101, 101", r.search.n, got)
	}
}

func TestTerms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text     string
		compound bool
		want     string
	}{
		{"refund_order", true, "refundorder|refund|order|refund order"},
		{"what's on my to-do list", true, "todo|list"},
		{"e-mail", true, "email|e|mail|e mail"},
		{"refundOrder", true, "refundorder|refund|order|refund order"},
		{"HTTPServer", false, "http|server|http server"},
		{"open PRs, URLs and IDs", true, "open|prs|url|id|open prs|prs url|url id"},
		{"HTTPServers listUserIDs", true, "httpservers|listuserids|http|server|list|user|id|http server|server list|list user|user id"},
		{"oauth2Token", false, "oauth2|token|oauth2 token"},
		{"Invoices, queries; statuses and classes", false, "invoic|queri|status|class|invoic queri|queri status|status class"},
		{"status class bus", false, "status|class|bus|status class|class bus"},
		{"uses causes houses", false, "use|caus|hous|use caus|caus hous"},
		{"meetings reminders scheduled", false, "meet|remind|schedul|meet remind|remind schedul"},
		{"the of a", false, ""},
		{"Café DÉJÀ-VU", true, "déjàvu|café|déjà|vu|café déjà|déjà vu"},
		{"branches boxes buzzes dishes", false, "branch|box|buzz|dish|branch box|box buzz|buzz dish"},
		{"bad\xffutf8", false, "bad|utf8|bad utf8"},
	} {
		got := strings.Join(appendTerms(nil, tc.text, tc.compound), "|")
		if got != tc.want {
			t.Errorf("appendTerms(%q, %v) = %q, want %q", tc.text, tc.compound, got, tc.want)
		}
	}
}
