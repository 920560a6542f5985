package registry_test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/registry"
)

var (
	evalMisses = flag.Bool("eval.misses", false, "print each request of the tuning half that search answers badly (never the held-out half's)")
	evalTuning = flag.Bool("eval.tuning", false, "measure the tuning half only, as while tuning")
)

// evalRequest is one line of testdata/searcheval/*.tsv: a request and the
// tools that answer it (none: no tool does).
type evalRequest struct {
	text string
	want []string
}

func readEvalRequests(t testing.TB, file string) []evalRequest {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []evalRequest
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		text, want, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("%s:%d: want request<TAB>tools, got %q", file, n, line)
		}
		r := evalRequest{text: text}
		if want != "-" {
			r.want = strings.Split(want, ",")
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// evalFigures are one half's measures; see testdata/searcheval/README.md.
type evalFigures struct {
	answered, none int // requests some tool answers; requests none does
	p1, r3, mrr    float64
	quiet          int // of the none requests, how many matched nothing
	// noise is the mean number of matches of the none requests (of at most
	// 10): what a model asking for a tool nobody wrote is offered. Unlike
	// quiet, it moves with every match a ranking drops or adds, so its
	// ceiling (in evalFloors) fails on a ranking that offers more.
	noise float64
}

func (f evalFigures) String() string {
	return fmt.Sprintf("precision@1 %.3f, recall@3 %.3f, MRR %.3f over %d requests; %d of %d requests for no tool matched nothing, and they matched %.2f tools on average",
		f.p1, f.r3, f.mrr, f.answered, f.quiet, f.none, f.noise)
}

// below lists the figures of f worse than floor's, each with both values.
func (f evalFigures) below(floor evalFigures) []string {
	var out []string
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"precision@1", f.p1, floor.p1}, {"recall@3", f.r3, floor.r3}, {"MRR", f.mrr, floor.mrr}, {"requests for no tool that matched nothing", float64(f.quiet), float64(floor.quiet)}} {
		if c.got < c.want {
			out = append(out, fmt.Sprintf("%s %.4g < %.4g", c.name, c.got, c.want))
		}
	}
	// noise is a ceiling: lower is better.
	if f.noise > floor.noise {
		out = append(out, fmt.Sprintf("the mean matches of a request for no tool %.4g > %.4g", f.noise, floor.noise))
	}
	return out
}

// evaluate runs every request through search and measures the answers; with
// misses it logs the requests answered badly.
func evaluate(t *testing.T, search func(string) []string, reqs []evalRequest, misses bool) evalFigures {
	var f evalFigures
	for _, r := range reqs {
		got := search(r.text)
		if r.want == nil {
			f.none++
			f.noise += float64(len(got))
			if len(got) == 0 {
				f.quiet++
			} else if misses {
				t.Logf("miss: %q (no tool) matched %v", r.text, got[:min(3, len(got))])
			}
			continue
		}
		f.answered++
		rank := slices.IndexFunc(got, func(n string) bool { return slices.Contains(r.want, n) })
		if rank == 0 {
			f.p1++
		}
		if rank >= 0 {
			f.mrr += 1 / float64(rank+1)
		}
		hit := 0
		for _, n := range got[:min(3, len(got))] {
			if slices.Contains(r.want, n) {
				hit++
			}
		}
		f.r3 += float64(hit) / float64(min(3, len(r.want)))
		if misses && rank != 0 {
			t.Logf("miss: %q want %v, got %v", r.text, r.want, got[:min(3, len(got))])
		}
	}
	n := float64(f.answered)
	f.p1, f.r3, f.mrr = f.p1/n, f.r3/n, f.mrr/n
	if f.none > 0 {
		f.noise /= float64(f.none)
	}
	return f
}

// The figures each half reached when the ranking was last tuned: the
// evaluation fails below them, so a change that ranks worse is seen. Before
// issue 34 (BM25, plural endings only): tune 0.426, 0.623, 0.525, 3 of 3
// quiet; held-out 0.571, 0.602, 0.602, 4 of 5 quiet. After issue 34's first
// round: tune 0.492, 0.664, 0.592, 1 of 3; held-out 0.592, 0.714, 0.654,
// 0 of 5; second 0.314, 0.457, 0.419, 0 of 2 (the second set was written
// after that round, before the third). Round four: the third set, with its
// own tools, written before any change: 0.476, 0.659, 0.584, 0 of 5. A word
// matched through a relation counting less in coordination: tune 0.541,
// 0.672, 0.617; held-out 0.612, 0.714, 0.656; second 0.314, 0.471, 0.421;
// third 0.476, 0.659, 0.578 (recall@3 of tune, MRR of second and third one
// request's rank lower each). BM25F, params not diluting a tool's head:
// tune 0.541, 0.689, 0.620; held-out unchanged; second 0.314, 0.500, 0.428;
// third 0.476, 0.675, 0.579. A term that is one query word and related to
// another credited for each at its own level (it gave the related word full
// credit): tune 0.525, 0.689, 0.612 (one request lost: "content" had
// answered "example" of "read the contents of https://example.com" fully);
// the other sets unchanged. The requests for no tool are also measured by
// how many tools they match on average (noise, a ceiling, not a floor): most
// sets have no request that matches nothing, so their quiet floor of 0
// could not fail; a ranking that offers more tools for them fails noise.
// Round five, each query word's nearest neighbours in GloVe's vectors
// (antonyms left out), a one-word query's match through a relation scaled
// down as in longer ones, and the floor of a tenth taken from the best of
// all tools: tune 0.525, 0.713, 0.624; held-out 0.592, 0.745, 0.675 (one
// request lower first, three higher in the first three); second 0.343,
// 0.586, 0.483; third 0.540, 0.738, 0.641 (four requests higher first). The
// requests for no tool are offered more (noise: held-out 6.0 to 7.2, second
// 8.5 to 10, third 3.4 to 5.4): their ceilings are raised to match, a cost
// of expansion the README states. A number no longer a word (the last 10
// commits matched a forecast of 1-10 days): tune 0.557, 0.713, 0.641, the
// other sets unchanged.
var evalFloors = map[string]evalFigures{
	"tune":    {p1: 0.557, r3: 0.712, mrr: 0.640, quiet: 1, noise: 6.67},
	"heldout": {p1: 0.591, r3: 0.744, mrr: 0.674, quiet: 0, noise: 7.20},
	"second":  {p1: 0.342, r3: 0.585, mrr: 0.482, quiet: 0, noise: 10.00},
	"third":   {p1: 0.539, r3: 0.737, mrr: 0.640, quiet: 0, noise: 5.40},
}

// TestSearchEvaluation measures the offline ranking on the evaluation set of
// testdata/searcheval (its README says how it was written and split), and
// prints precision@1, recall@3 and MRR for each half with -v.
func TestSearchEvaluation(t *testing.T) {
	t.Parallel()
	// Each set of requests with the tools it is asked of.
	sets := []struct{ name, tools string }{
		{"tune", "tools"}, {"heldout", "tools"}, {"second", "tools"}, {"third", "tools3"},
	}
	if *evalTuning {
		sets = sets[:1]
	}
	registries := map[string]*registry.Registry{}
	for _, set := range sets {
		half := set.name
		r := registries[set.tools]
		if r == nil {
			r = loadRegistry(t, "testdata/searcheval/"+set.tools)
			registries[set.tools] = r
		}
		search := func(text string) []string {
			return names(r.Search(registry.Query{Text: text, Limit: 10}))
		}
		reqs := readEvalRequests(t, "testdata/searcheval/"+half+".tsv")
		got := evaluate(t, search, reqs, *evalMisses && half == "tune")
		t.Logf("%s: %v", half, got)
		floor := evalFloors[half]
		if below := got.below(floor); len(below) > 0 {
			t.Errorf("%s: %v\nshort of the figures reached when the ranking was last tuned: %s (evalFloors): mend the ranking, or lower the floor and say why in its comment", half, got, strings.Join(below, ", "))
		}
	}
}
