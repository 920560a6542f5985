package lexicon

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// BuildOptions say what of WordNet goes into the table.
type BuildOptions struct {
	// Senses is how many of a word's senses, most frequent first, give it
	// related words (WordNet orders senses by their frequency in its tagged
	// corpus); the rare senses of a word are what makes expansion noisy.
	Senses int
	// MaxRelated caps the related words kept per word, strongest relation
	// first, then in sense order.
	MaxRelated int
	// Hypernyms2 also lists the hypernyms of the hypernyms (rain:
	// precipitation: weather).
	Hypernyms2 bool
	// TaggedOnly lists only words seen in WordNet's sense-tagged corpus
	// (tagsense_cnt > 0): common words, those people write; the others
	// (species, places, rare terms) make the table large and match little.
	TaggedOnly bool
	// SenseShare, when positive, drops a sense (of Senses) whose count in
	// WordNet's tagged corpus (cntlist.rev) is below this share of the
	// word's most frequent sense, over all its parts of speech: "file" the
	// verb (50 tags) keeps its noun sense of records (17) and drops its rare
	// ones.
	SenseShare float64
	// GlossWords lists up to this many words of the definition of each kept
	// sense (its gloss, examples dropped) as Gloss: "forecast" (a prediction
	// about how something, as the weather, will develop) reaches
	// "prediction" and "weather".
	GlossWords int
}

// DefaultBuildOptions are the options the committed table was built with.
var DefaultBuildOptions = BuildOptions{Senses: 2, MaxRelated: 32, Hypernyms2: true, TaggedOnly: true, SenseShare: 0.1, GlossWords: 4}

// Build derives the table from the WordNet 3.0 database files in dir
// (Debian's wordnet-base installs them in /usr/share/wordnet): for each
// single-word lemma (with TaggedOnly, each one seen in WordNet's tagged
// corpus), the single-word lemmas of its first senses' synsets (synonyms),
// of their direct hypernyms (and theirs, with Hypernyms2), its
// derivationally related forms and pertainyms, and the first words of those
// senses' definitions (GlossWords), of the senses SenseShare keeps by
// cntlist.rev's counts, all stemmed as the index stems words; and the
// irregular forms of the *.exc files (ran: run). The result is the bytes of
// wordnet.bin; see the format in lexicon.go.
func Build(dir string, opt BuildOptions) ([]byte, error) {
	synsets, err := readData(dir)
	if err != nil {
		return nil, err
	}
	counts, err := readCounts(dir)
	if err != nil {
		return nil, err
	}
	related := map[string][]rel{} // key stem -> related stems
	add := func(key, word string, kind Relation, rank int) {
		if !singleWord(word) {
			return
		}
		k, w := Stem(key), Stem(word)
		if k == "" || w == "" || k == w {
			return
		}
		related[k] = append(related[k], rel{w, kind, rank})
	}
	for _, pos := range []string{"noun", "verb", "adj", "adv"} {
		idx, err := readIndex(filepath.Join(dir, "index."+pos))
		if err != nil {
			return nil, err
		}
		for _, e := range idx {
			if !singleWord(e.lemma) || (opt.TaggedOnly && e.tagged == 0) {
				continue
			}
			n := min(len(e.offsets), opt.Senses)
			for sense, off := range e.offsets[:n] {
				if opt.SenseShare > 0 && float64(counts[senseKey{e.lemma, pos, sense + 1}]) < opt.SenseShare*float64(counts[senseKey{e.lemma, "", 0}]) {
					continue
				}
				s := synsets[pos][off]
				if s == nil {
					return nil, fmt.Errorf("lexicon: index.%s: %s: no synset %d in data.%s", pos, e.lemma, off, pos)
				}
				self := slices.Index(s.words, e.lemma) + 1 // 1-based word number
				for _, w := range s.words {
					add(e.lemma, w, Synonym, sense)
				}
				for _, w := range glossWords(s.gloss, opt.GlossWords) {
					add(e.lemma, w, Gloss, sense)
				}
				for _, p := range s.pointers {
					switch {
					case p.symbol == "@" || p.symbol == "@i":
						h := synsets[p.pos][p.offset]
						if h == nil {
							continue
						}
						for _, w := range h.words {
							add(e.lemma, w, Hypernym, sense)
						}
						if !opt.Hypernyms2 {
							continue
						}
						for _, p2 := range h.pointers {
							if h2 := synsets[p2.pos][p2.offset]; h2 != nil && (p2.symbol == "@" || p2.symbol == "@i") {
								for _, w := range h2.words {
									add(e.lemma, w, Hypernym2, sense)
								}
							}
						}
					case (p.symbol == "+" || p.symbol == `\`) && p.source == self:
						if t := synsets[p.pos][p.offset]; t != nil && p.target >= 1 && p.target <= len(t.words) {
							add(e.lemma, t.words[p.target-1], Derived, sense)
						}
					}
				}
			}
		}
	}
	for _, pos := range []string{"noun", "verb", "adj", "adv"} {
		f, err := os.Open(filepath.Join(dir, pos+".exc"))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			for _, base := range fs[1:] {
				if singleWord(fs[0]) {
					add(fs[0], base, Form, -1)
				}
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}

	// Each key's related words, each once with its strongest relation.
	final := map[string][]rel{}
	for k, rs := range related {
		slices.SortStableFunc(rs, func(a, b rel) int {
			return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.rank, b.rank))
		})
		seen := map[string]bool{}
		var keep []rel
		for _, r := range rs {
			if !seen[r.word] && len(keep) < opt.MaxRelated {
				seen[r.word] = true
				keep = append(keep, r)
			}
		}
		final[k] = keep
	}
	return encode(magic, final), nil
}

// rel is a word related to a key of a table, by its relation (for the
// neighbour table, its closeness level), found rank-th.
type rel struct {
	word string
	kind Relation
	rank int // the order found: sense, then position (WordNet's table only)
}

// encode returns a table of the related words of each key, in the format
// lexicon.go reads, under magic.
func encode(magic string, final map[string][]rel) []byte {
	words := map[string]bool{}
	for k, rs := range final {
		words[k] = true
		for _, r := range rs {
			words[r.word] = true
		}
	}
	sorted := make([]string, 0, len(words))
	for w := range words {
		sorted = append(sorted, w)
	}
	slices.Sort(sorted)
	id := make(map[string]int, len(sorted))
	for i, w := range sorted {
		id[w] = i
	}

	// The format: see lexicon.go.
	var strs, lists []byte
	strOff := make([]uint32, 0, len(sorted)+1)
	listOff := make([]uint32, 0, len(sorted)+1)
	for _, w := range sorted {
		strOff = append(strOff, uint32(len(strs)))
		strs = append(strs, w...)
		listOff = append(listOff, uint32(len(lists)))
		for _, r := range final[w] {
			lists = binary.AppendUvarint(lists, uint64(id[r.word])<<3|uint64(r.kind))
		}
	}
	strOff = append(strOff, uint32(len(strs)))
	listOff = append(listOff, uint32(len(lists)))
	out := []byte(magic)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(sorted)))
	for _, o := range strOff {
		out = binary.LittleEndian.AppendUint32(out, o)
	}
	for _, o := range listOff {
		out = binary.LittleEndian.AppendUint32(out, o)
	}
	out = append(out, strs...)
	out = append(out, lists...)
	return out
}

// singleWord reports whether a lemma is one word of letters: WordNet joins
// the words of a collocation with '_', and such a lemma is no query term.
func singleWord(lemma string) bool {
	if len(lemma) < 2 {
		return false
	}
	for _, c := range lemma {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

type indexEntry struct {
	lemma   string
	offsets []int
	tagged  int // senses seen in the tagged corpus
}

// readIndex reads an index.POS file: lemma pos synset_cnt p_cnt [ptr...]
// sense_cnt tagsense_cnt synset_offset..., senses most frequent first.
func readIndex(file string) ([]indexEntry, error) {
	var out []indexEntry
	err := eachLine(file, func(n int, f []string) error {
		if len(f) < 4 {
			return fmt.Errorf("short line")
		}
		pcnt, err := strconv.Atoi(f[3])
		if err != nil || len(f) < 6+pcnt {
			return fmt.Errorf("bad p_cnt %q", f[3])
		}
		tagged, err := strconv.Atoi(f[5+pcnt])
		if err != nil {
			return fmt.Errorf("bad tagsense_cnt %q", f[5+pcnt])
		}
		e := indexEntry{lemma: f[0], tagged: tagged}
		for _, s := range f[6+pcnt:] {
			off, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Errorf("bad synset offset %q", s)
			}
			e.offsets = append(e.offsets, off)
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

type pointer struct {
	symbol         string
	offset         int
	pos            string
	source, target int
}

type synset struct {
	words    []string
	pointers []pointer
	gloss    string
}

// glossWords returns the first n words of a gloss's definition (before its
// first ';' or quoted example) that are no stop words, lower-cased.
func glossWords(gloss string, n int) []string {
	if n <= 0 {
		return nil
	}
	if i := strings.IndexAny(gloss, ";\""); i >= 0 {
		gloss = gloss[:i]
	}
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(gloss), func(r rune) bool { return (r < 'a' || r > 'z') && r != '-' }) {
		if len(out) == n {
			break
		}
		if !StopWord(w) {
			out = append(out, w)
		}
	}
	return out
}

// senseKey names a sense of a lemma: its part of speech (the name of its
// index file) and number, most frequent first from 1. The zero pos and
// number stand for the lemma's most frequent sense over every part of
// speech.
type senseKey struct {
	lemma string
	pos   string
	sense int
}

// cntPOS maps a sense key's ss_type digit to the name of its index file.
var cntPOS = map[byte]string{'1': "noun", '2': "verb", '3': "adj", '4': "adv", '5': "adj"}

// readCounts reads cntlist.rev: sense_key sense_number tag_cnt, where a
// sense key starts lemma%ss_type; it returns each sense's count, and under
// the zero key of each lemma its largest.
func readCounts(dir string) (map[senseKey]int, error) {
	out := map[senseKey]int{}
	err := eachLine(filepath.Join(dir, "cntlist.rev"), func(n int, f []string) error {
		if len(f) != 3 {
			return fmt.Errorf("want sense_key sense_number tag_cnt")
		}
		lemma, rest, ok := strings.Cut(f[0], "%")
		if !ok || rest == "" || cntPOS[rest[0]] == "" {
			return fmt.Errorf("bad sense key %q", f[0])
		}
		sense, err1 := strconv.Atoi(f[1])
		cnt, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			return fmt.Errorf("bad sense number or count in %q", f)
		}
		out[senseKey{lemma, cntPOS[rest[0]], sense}] = cnt
		top := senseKey{lemma: lemma}
		out[top] = max(out[top], cnt)
		return nil
	})
	return out, err
}

var posNames = map[string]string{"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}

// readData reads the data.POS files of dir, each line: offset lex_filenum
// ss_type w_cnt (word lex_id)... p_cnt (symbol offset pos source/target)...
// | gloss; it returns their synsets by POS file name, then by offset.
func readData(dir string) (map[string]map[int]*synset, error) {
	all := map[string]map[int]*synset{}
	for _, p := range []string{"noun", "verb", "adj", "adv"} {
		m := map[int]*synset{}
		all[p] = m
		err := eachLine(filepath.Join(dir, "data."+p), func(n int, f []string) error {
			var gloss string
			if i := slices.Index(f, "|"); i >= 0 {
				gloss = strings.Join(f[i+1:], " ")
				f = f[:i]
			}
			if len(f) < 4 {
				return fmt.Errorf("short line")
			}
			off, err := strconv.Atoi(f[0])
			if err != nil {
				return fmt.Errorf("bad offset %q", f[0])
			}
			wcnt, err := strconv.ParseInt(f[3], 16, 32)
			if err != nil || len(f) < 5+2*int(wcnt) {
				return fmt.Errorf("bad w_cnt %q", f[3])
			}
			s := &synset{gloss: gloss}
			for i := range int(wcnt) {
				w := strings.ToLower(f[4+2*i])
				if j := strings.IndexByte(w, '('); j >= 0 {
					w = w[:j] // an adjective's syntactic marker: galore(ip)
				}
				s.words = append(s.words, w)
			}
			rest := f[4+2*wcnt:]
			pcnt, err := strconv.Atoi(rest[0])
			if err != nil || len(rest) < 1+4*pcnt {
				return fmt.Errorf("bad p_cnt %q", rest[0])
			}
			for i := range pcnt {
				q := rest[1+4*i : 5+4*i]
				o, err1 := strconv.Atoi(q[1])
				st, err2 := strconv.ParseUint(q[3], 16, 16)
				if err1 != nil || err2 != nil || posNames[q[2]] == "" {
					return fmt.Errorf("bad pointer %q", q)
				}
				s.pointers = append(s.pointers, pointer{symbol: q[0], offset: o, pos: posNames[q[2]], source: int(st >> 8), target: int(st & 0xff)})
			}
			m[off] = s
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return all, nil
}

// eachLine calls fn with the fields of each line of file but its licence
// header (lines starting with two spaces).
func eachLine(file string, fn func(n int, fields []string) error) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("lexicon: %w (install Debian's wordnet-base, or name the directory of WordNet 3.0's database files)", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "  ") || line == "" {
			continue
		}
		if err := fn(n, strings.Fields(line)); err != nil {
			return fmt.Errorf("lexicon: %s:%d: %v", file, n, err)
		}
	}
	return sc.Err()
}
