package lexicon

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

func neighboursOf(stem string) map[string]int { return maps.Collect(Neighbours(stem)) }

// The committed table reaches the words a person means by another: what
// WordNet's relations miss (rain is weather's hyponym's hyponym, a dollar no
// kind of euro).
func TestNeighbours(t *testing.T) {
	t.Parallel()
	if !strings.HasPrefix(neighboursBin, neighboursMagic) {
		t.Fatalf("neighbours.bin does not start with %q", neighboursMagic)
	}
	for _, tc := range []struct{ word, neighbour string }{
		{"rain", "weather"},
		{"rain", "snow"},
		{"weather", "forecast"},
		{"dollars", "euro"},
		{"meeting", "schedule"},
		{"email", "mail"},
		{"salary", "payroll"},
		{"translate", "language"},
	} {
		if _, ok := neighboursOf(Stem(tc.word))[Stem(tc.neighbour)]; !ok {
			t.Errorf("Neighbours(Stem(%q)) lacks %q: %v", tc.word, Stem(tc.neighbour), neighboursOf(Stem(tc.word)))
		}
	}
	// Antonyms are used in the same contexts, and are dropped.
	for _, tc := range []struct{ word, antonym string }{{"close", "open"}, {"buy", "sell"}, {"win", "lose"}} {
		if _, ok := neighboursOf(Stem(tc.word))[Stem(tc.antonym)]; ok {
			t.Errorf("Neighbours(Stem(%q)) has its antonym %q", tc.word, tc.antonym)
		}
	}
	// Closest first, never itself, within the levels.
	var levels []int
	for n, level := range Neighbours("rain") {
		if n == "rain" || level < 0 || level >= Closeness {
			t.Errorf("Neighbours(rain) yields %q at level %d", n, level)
		}
		levels = append(levels, level)
	}
	if len(levels) == 0 || !slices.IsSortedFunc(levels, func(a, b int) int { return b - a }) {
		t.Errorf("Neighbours(rain) levels %v, want closest first", levels)
	}
	if got := neighboursOf("zorblax"); len(got) != 0 {
		t.Errorf("Neighbours(zorblax) = %v, want nothing", got)
	}
}

// vectorsJSON writes word vectors in the package's form, words in the order
// given (most frequent first).
func vectorsJSON(words []string, vecs map[string][]float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"precision":8,"dimensions":3,"size":%d,"words":[`, len(words))
	for i, w := range words {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q", w)
	}
	b.WriteString(`],"vectors":{`)
	for i, w := range slices.Sorted(maps.Keys(vecs)) {
		if i > 0 {
			b.WriteByte(',')
		}
		v := vecs[w]
		fmt.Fprintf(&b, "%q:[%g,%g,%g,1,%d]", w, v[0], v[1], v[2], i)
	}
	b.WriteString(`},"unkVector":[0,0,0]}`)
	return b.String()
}

func TestBuildNeighbours(t *testing.T) {
	t.Parallel()
	words := []string{"the", "close", "open", "shut", "rain", "Paris", "snow", "rains", "far", "rare"}
	vecs := map[string][]float64{
		"the":   {1, 1, 1},
		"close": {1, 0, 0},
		"open":  {1, 0.01, 0}, // the closest to close and shut, their antonym
		"shut":  {1, 0.3, 0},
		"rain":  {0, 1, 0.1},
		"Paris": {0, 1, 0.1},
		"snow":  {0, 1, 0.4},
		"rains": {0, 1, 0.1},
		"far":   {0, 0, 1}, // near nothing
		"rare":  {0, 1, 0.1},
	}
	got := buildTable(t, words, vecs, NeighbourOptions{Words: 9, Neighbours: 1, MinCosine: 0.5})
	// the: a stop word; Paris: not lower-case; rare: past Words; rains:
	// rain's stem; one neighbour each (the closest), at its level of cos
	// from 0.5 to 1 in eighths: close and shut, cos 0.958, level 7; rain and
	// snow, cos 0.96, level 7. WordNet calls open the antonym of both close
	// and shut: it lists neither, and has nothing else near (far neither),
	// so the table does not hold them.
	want := map[string]string{
		"close": "shut:7",
		"shut":  "close:7",
		"rain":  "snow:7",
		"snow":  "rain:7",
	}
	if !maps.Equal(got, want) {
		t.Errorf("built %v, want %v", got, want)
	}
}

func TestBuildNeighboursRefusesMalformedVectors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, json, want string }{
		{"not JSON", `{"words": [`, "reading word vectors"},
		{"no dimensions", `{"words": ["rain"], "vectors": {"rain": [1, 2]}}`, "no dimensions"},
		{"a word without a vector", `{"dimensions": 2, "words": ["rain"], "vectors": {}}`, `"rain" has no vector`},
		{"a short vector", `{"dimensions": 2, "words": ["rain"], "vectors": {"rain": [1]}}`, `the vector of "rain"`},
		{"not numbers", `{"dimensions": 2, "words": ["rain"], "vectors": {"rain": ["a", "b"]}}`, `the vector of "rain"`},
	} {
		_, err := BuildNeighbours(strings.NewReader(tc.json), "/usr/share/wordnet", DefaultNeighbourOptions)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one saying %q", tc.name, err, tc.want)
		}
	}
	for _, opt := range []NeighbourOptions{{Words: 0, Neighbours: 1}, {Words: 1, Neighbours: 0}, {Words: 1, Neighbours: 1, MinCosine: 1}} {
		if _, err := BuildNeighbours(strings.NewReader(`{}`), "/usr/share/wordnet", opt); err == nil || !strings.Contains(err.Error(), "neighbour options") {
			t.Errorf("options %+v: err = %v, want them refused", opt, err)
		}
	}
}

// buildTable builds a neighbour table from vecs (words in the order given,
// most frequent first) and returns each stem's neighbours as "stem:level".
func buildTable(t *testing.T, words []string, vecs map[string][]float64, opt NeighbourOptions) map[string]string {
	t.Helper()
	b, err := BuildNeighbours(strings.NewReader(vectorsJSON(words, vecs)), "/usr/share/wordnet", opt)
	if err != nil {
		t.Fatal(err)
	}
	tb := open(string(b), neighboursMagic)
	got := map[string]string{}
	for i := range tb.n {
		var ns []string
		tb.related(tb.word(i), func(s string, r Relation) bool {
			ns = append(ns, fmt.Sprintf("%s:%d", s, r))
			return true
		})
		got[tb.word(i)] = strings.Join(ns, " ")
	}
	return got
}

// A neighbour's level is its cosine's step between MinCosine and 1, in
// eighths: 0.8 is step 4 of 0.5 to 1, 0.55 step 0.
func TestBuildNeighboursLevelsByCosine(t *testing.T) {
	t.Parallel()
	got := buildTable(t, []string{"alpha", "beta", "gamma"}, map[string][]float64{
		"alpha": {1, 0, 0},
		"beta":  {0.8, 0.6, 0},       // cos 0.8 with alpha
		"gamma": {0.55, 0, 0.835165}, // cos 0.55 with alpha
	}, NeighbourOptions{Words: 3, Neighbours: 2, MinCosine: 0.5})
	if got["alpha"] != "beta:4 gamma:0" {
		t.Errorf("alpha's neighbours %q, want beta:4 gamma:0", got["alpha"])
	}
}

// A stem's vector sums its forms' vectors weighed by their frequency: walk,
// the most frequent word, outweighs walking, ten times rarer, so the stem is
// near march (walk's), not jog (between the two forms).
func TestBuildNeighboursWeighsAStemsFormsByFrequency(t *testing.T) {
	t.Parallel()
	words := []string{"walk", "march", "jog", "Xa", "Xb", "Xc", "Xd", "Xe", "Xf", "walking"} // X*: not lower-case, skipped
	got := buildTable(t, words, map[string][]float64{
		"walk":    {1, 0, 0},
		"walking": {0, 1, 0},
		"march":   {1, 0, 0.05},
		"jog":     {0.3, 1, 0},
	}, NeighbourOptions{Words: len(words), Neighbours: 1, MinCosine: 0.5})
	if !strings.HasPrefix(got["walk"], "march:") {
		t.Errorf("walk's neighbours %q, want march: walk (rank 1) weighs ten times walking (rank 10)", got["walk"])
	}
}
