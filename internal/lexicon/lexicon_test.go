package lexicon

import (
	"bytes"
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
	if !bytes.Equal(b, []byte(table)) {
		t.Fatalf("wordnet.bin (%d bytes) is not what Build derives (%d bytes): run scripts/lexicon-table.sh and commit it", len(table), len(b))
	}
}

func related(stem string) map[string]Relation {
	m := map[string]Relation{}
	for r, rel := range Related(stem) {
		m[r] = rel
	}
	return m
}

func TestRelated(t *testing.T) {
	t.Parallel()
	if !strings.HasPrefix(table, magic) {
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

// A lookup reads the embedded table in place.
func TestRelatedAllocatesNothing(t *testing.T) {
	n := 0
	allocs := testing.AllocsPerRun(100, func() {
		for range Related("rain") {
			n++
		}
	})
	if allocs != 0 || n == 0 {
		t.Errorf("Related(rain): %v allocations, %d words", allocs, n)
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
