package lexicon

import (
	"bytes"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// The committed table is what Build derives from WordNet with the default
// options: regenerate it with scripts/lexicon-table.sh when this fails.
// It needs Debian's wordnet-base, which .ci/run installs.
func TestTableIsBuiltFromWordNet(t *testing.T) {
	t.Parallel()
	const dir = "/usr/share/wordnet"
	if _, err := os.Stat(dir + "/data.noun"); err != nil {
		t.Fatalf("no WordNet database in %s (%v): apt-get install wordnet-base", dir, err)
	}
	b, err := Build(dir, DefaultBuildOptions)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, []byte(wordnetBin)) {
		t.Fatalf("wordnet.bin (%d bytes) is not what Build derives (%d bytes): run scripts/lexicon-table.sh and commit it", len(wordnetBin), len(b))
	}
}

func related(stem string) map[string]Relation { return maps.Collect(Related(stem)) }

func TestRelated(t *testing.T) {
	t.Parallel()
	if !strings.HasPrefix(wordnetBin, magic) {
		t.Fatalf("wordnet.bin does not start with %q", magic)
	}
	for _, tc := range []struct {
		word, related string
		rel           Relation
	}{
		{"ran", "run", Form},
		{"mice", "mous", Form},
		{"rain", "rainfal", Synonym},
		{"rain", "precipit", Hypernym},
		{"rain", "weather", Hypernym2},
		{"reimbursed", "refund", Hypernym},
		{"remind", "remind", Synonym}, // the stem itself is never listed
		{"schedule", "agenda", Synonym},
		{"dollar", "buck", Synonym},
		// The definition of a first sense: forecast (n.1), "a prediction
		// about how something (as the weather) will develop"; calendar (n.1),
		// "a list or register of events (appointments/social engagements
		// etc.)".
		{"forecast", "weather", Gloss},
		{"forecast", "develop", Gloss},
		{"calendar", "event", Gloss},
		{"calendar", "appoint", Gloss},
	} {
		got, ok := related(Stem(tc.word))[tc.related]
		if tc.word == tc.related {
			if ok {
				t.Errorf("%s lists itself", tc.word)
			}
			continue
		}
		if !ok || got != tc.rel {
			t.Errorf("Related(Stem(%q)) has %q: %v as %d, want it as %d", tc.word, tc.related, ok, got, tc.rel)
		}
	}
	if got := related("zorblax"); len(got) != 0 {
		t.Errorf("Related(zorblax) = %v, want nothing", got)
	}
	// Strongest relation first.
	var rels []Relation
	for _, rel := range Related(Stem("rain")) {
		rels = append(rels, rel)
	}
	if !slices.IsSorted(rels) {
		t.Errorf("Related(rain) relations %v, want strongest first", rels)
	}
}

// A sense tagged less than a tenth as often as the word's most frequent one
// gives it no related words. File: the verb's first sense (file a report, 50
// tags) and second (smooth with a file, 10), and the noun's first (a set of
// records, 17), are kept; the noun's second (a line of people, 1 tag) is
// not, so file is not related to its hypernym, line, nor to line's,
// formation.
func TestRareSensesAreDropped(t *testing.T) {
	t.Parallel()
	counts, err := readCounts("/usr/share/wordnet")
	if err != nil {
		t.Fatal(err)
	}
	if got := counts[senseKey{"file", "noun", 2}]; got != 1 {
		t.Fatalf("cntlist.rev: file's second noun sense has %d tags, want 1", got)
	}
	if got := counts[senseKey{lemma: "file"}]; got != 50 {
		t.Fatalf("cntlist.rev: file's most frequent sense has %d tags, want 50", got)
	}
	rel := related("file")
	for _, w := range []string{"regist", "record", "smooth"} {
		if _, ok := rel[w]; !ok {
			t.Errorf("Related(file) lacks %q, of a frequent sense: %v", w, rel)
		}
	}
	for _, w := range []string{"line", "format"} {
		if _, ok := rel[w]; ok {
			t.Errorf("Related(file) has %q, of its rare sense: %v", w, rel)
		}
	}
}

func TestKnown(t *testing.T) {
	t.Parallel()
	for w, want := range map[string]bool{
		"contract": true, "contact": true, "receive": true, "weather": true, "calendar": true,
		// Misspellings, and WordNet words too rare to have been tagged:
		// search may take them for a typo.
		"recieve": false, "wether": false, "calender": false, "zorblax": false,
	} {
		if got := Known(Stem(w)); got != want {
			t.Errorf("Known(Stem(%q)) = %v, want %v", w, got, want)
		}
	}
}

func TestGlossWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		gloss string
		n     int
		want  string
	}{
		{`a prediction about how something (as the weather) will develop; "the manager's forecast was too optimistic"`, 4, "prediction something weather develop"},
		{`a prediction about how something (as the weather) will develop`, 2, "prediction something"},
		{`the atmospheric conditions; "they were hoping for good weather"`, 8, "atmospheric conditions"},
		{`anything; "x"`, 0, ""},
	} {
		if got := strings.Join(glossWords(tc.gloss, tc.n), " "); got != tc.want {
			t.Errorf("glossWords(%q, %d) = %q, want %q", tc.gloss, tc.n, got, tc.want)
		}
	}
}

// A lookup reads the embedded tables in place.
func TestLookupsAllocateNothing(t *testing.T) {
	for name, words := range map[string]func(string) int{
		"Related": func(s string) (n int) {
			for range Related(s) {
				n++
			}
			return n
		},
		"Neighbours": func(s string) (n int) {
			for range Neighbours(s) {
				n++
			}
			return n
		},
	} {
		n := 0
		allocs := testing.AllocsPerRun(100, func() { n += words("rain") })
		if allocs != 0 || n == 0 {
			t.Errorf("%s(rain): %v allocations, %d words", name, allocs, n)
		}
	}
}

func TestStemAndStopWords(t *testing.T) {
	t.Parallel()
	for w, want := range map[string]string{"meetings": "meet", "reminder": "remind", "reminds": "remind", "forecasts": "forecast", "is": "is", "go": "go"} {
		if got := Stem(w); got != want {
			t.Errorf("Stem(%q) = %q, want %q", w, got, want)
		}
	}
	for _, w := range []string{"the", "what", "s", "please", "could"} {
		if !StopWord(w) {
			t.Errorf("StopWord(%q) = false", w)
		}
	}
	for _, w := range []string{"weather", "file", "rain"} {
		if StopWord(w) {
			t.Errorf("StopWord(%q) = true", w)
		}
	}
}
