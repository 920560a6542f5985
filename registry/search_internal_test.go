package registry

import (
	"fmt"
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
	if r.search.n != 0 || r.search.postings != nil {
		t.Fatalf("Register built an index of %d tools", r.search.n)
	}
	r.Search(Query{Text: "report"})
	if r.search.n != 100 || len(r.search.postings["report"]) != 100 {
		t.Fatalf("after a search the index holds %d tools, %d postings of report; want 100, 100", r.search.n, len(r.search.postings["report"]))
	}
	r.Search(Query{Text: "report"})
	if got := len(r.search.postings["report"]); got != 100 {
		t.Fatalf("a second search re-indexed: %d postings of report", got)
	}
	if err := r.Register(toolreg.NewTool(&toolreg.Spec{Name: "late", Description: "A late report."})); err != nil {
		t.Fatal(err)
	}
	r.Search(Query{Text: "report"})
	if got := len(r.search.postings["report"]); got != 101 || r.search.n != 101 {
		t.Fatalf("after a late Register: %d tools, %d postings of report; want 101, 101", r.search.n, got)
	}
}
