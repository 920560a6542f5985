package registry

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/beam-agents/toolreg/internal/lexicon"
)

// appendTerms appends to dst the terms of text: its words, split at
// punctuation, '_', '-' and camelCase humps, lower-cased, stop words and
// numbers dropped and stemmed (lexicon.Stem: Snowball English); and each
// pair of neighbouring words ("support ticket"), so that a phrase outranks
// the same words scattered. With compound, a word written with '_', '-' or
// humps (refund_order, refundOrder, to-do; not 1-10, two numbers) is also
// kept whole, lower-cased and joined (refundorder, todo), so that a tool's
// exact name matches it best and a hyphenated word meets its solid
// spelling, even when its parts are stop words.
func appendTerms(dst []string, text string, compound bool) []string {
	return appendTermsFunc(dst, text, compound, appendTerm)
}

// appendTermsFunc is appendTerms with term making each word's term.
func appendTermsFunc(dst []string, text string, compound bool, term func(dst []string, w string) []string) []string {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, " ")
	}
	text = normalized(text)
	var words []string
	for _, chunk := range strings.FieldsFunc(text, func(r rune) bool { return !isChunkRune(r) }) {
		humps := 0
		for _, part := range strings.FieldsFunc(chunk, isJoiner) {
			words = appendHumps(words, part, term)
			humps += countHumps(part)
		}
		if compound && humps > 1 {
			if j := joined(chunk); !number(j) {
				dst = append(dst, j)
			}
		}
	}
	dst = append(dst, words...)
	for i := 1; i < len(words); i++ {
		dst = append(dst, words[i-1]+" "+words[i])
	}
	return dst
}

// joined is a chunk's compound term: lower-cased, without '_' and '-'.
func joined(chunk string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return unicode.ToLower(r)
	}, chunk)
}

// countHumps returns how many humps appendHumps splits word into.
func countHumps(word string) int {
	rs := []rune(word)
	n := 1
	for i := 1; i < len(rs); i++ {
		if isHump(rs, i) {
			n++
		}
	}
	return n
}

// appendHumps splits one word at its camelCase humps (quasarId: quasar, id;
// HTTPServer: http, server; oauth2Token: oauth2, token) and appends each part
// as a term.
func appendHumps(dst []string, word string, term func(dst []string, w string) []string) []string {
	rs := []rune(word)
	start := 0
	for i := 1; i < len(rs); i++ {
		if isHump(rs, i) {
			dst = term(dst, string(rs[start:i]))
			start = i
		}
	}
	return term(dst, string(rs[start:]))
}

func appendTerm(dst []string, w string) []string {
	w = strings.ToLower(w)
	if dropped(w) {
		return dst
	}
	return append(dst, lexicon.Stem(w))
}

// termScanner gives the terms appendTerms gives, in another order, to a
// function, as bytes it reuses: it is how the index is built without
// allocating per word. appendTerms is its reference; FuzzTermScanner checks
// they agree.
type termScanner struct {
	// stems memoizes lexicon.Stem over the words scanned: a registry's
	// words are few and repeat, and stemming is the costly step. Its keys are
	// the index's vocabulary, which typo tolerance searches.
	stems map[string]string
	// byLen lists the keys of stems by their length in bytes, for typo
	// tolerance.
	byLen map[int][]string
	runes []rune
	word  []byte
	prev  []byte
	pair  []byte
	comp  []byte
}

// scan calls emit with each term of text; emit must not keep the bytes. A
// byte that is no UTF-8 separates words, as appendTerms's replacement of it
// by a space does: it decodes as utf8.RuneError, which is no chunk rune.
func (sc *termScanner) scan(text string, compound bool, emit func([]byte)) {
	text = normalized(text)
	sc.prev = sc.prev[:0]
	havePrev := false
	for len(text) > 0 {
		// The next chunk: a run of letters, digits, '_' and '-'.
		start := strings.IndexFunc(text, isChunkRune)
		if start < 0 {
			return
		}
		text = text[start:]
		end := strings.IndexFunc(text, func(r rune) bool { return !isChunkRune(r) })
		if end < 0 {
			end = len(text)
		}
		chunk := text[:end]
		text = text[end:]

		humps := 0
		for part := range strings.FieldsFuncSeq(chunk, isJoiner) {
			sc.runes = sc.runes[:0]
			for _, r := range part {
				sc.runes = append(sc.runes, r)
			}
			rs := sc.runes
			from := 0
			for i := 1; i <= len(rs); i++ {
				if i < len(rs) && !isHump(rs, i) {
					continue
				}
				humps++
				if sc.wordOf(rs[from:i]) {
					emit(sc.word)
					if havePrev {
						sc.pair = append(append(append(sc.pair[:0], sc.prev...), ' '), sc.word...)
						emit(sc.pair)
					}
					sc.prev = append(sc.prev[:0], sc.word...)
					havePrev = true
				}
				from = i
			}
		}
		if compound && humps > 1 {
			sc.comp = sc.comp[:0]
			for _, r := range chunk {
				if !isJoiner(r) {
					sc.comp = utf8.AppendRune(sc.comp, unicode.ToLower(r))
				}
			}
			if !number(string(sc.comp)) { // 1-10 is two numbers, not 110
				emit(sc.comp)
			}
		}
	}
}

// wordOf sets sc.word to the term of the hump rs, lower-cased and stemmed,
// and reports whether it is one: a stop word is not.
func (sc *termScanner) wordOf(rs []rune) bool {
	sc.word = sc.word[:0]
	for _, r := range rs {
		sc.word = utf8.AppendRune(sc.word, unicode.ToLower(r))
	}
	if dropped(string(sc.word)) {
		return false
	}
	st, ok := sc.stems[string(sc.word)]
	if !ok {
		if sc.stems == nil {
			sc.stems = make(map[string]string)
			sc.byLen = make(map[int][]string)
		}
		w := string(sc.word)
		st = lexicon.Stem(w)
		sc.stems[w] = st
		sc.byLen[len(w)] = append(sc.byLen[len(w)], w)
	}
	sc.word = append(sc.word[:0], st...)
	return true
}

// absorb adds to sc the words o scanned that sc has not, each list of
// byLen in the order o first saw them: after absorbing the scanners of
// consecutive shards in order, sc is the scanner that scanned them all.
func (sc *termScanner) absorb(o *termScanner) {
	if sc.stems == nil && len(o.stems) > 0 {
		sc.stems = make(map[string]string, len(o.stems))
		sc.byLen = make(map[int][]string, len(o.byLen))
	}
	for l, words := range o.byLen {
		for _, w := range words {
			if _, ok := sc.stems[w]; !ok {
				sc.stems[w] = o.stems[w]
				sc.byLen[l] = append(sc.byLen[l], w)
			}
		}
	}
}

// isChunkRune reports whether r is part of a chunk of words: a letter, a
// digit, a mark (a combining accent, a vowel sign: part of its letter's
// word), '_' or '-'.
func isChunkRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-' || r >= utf8.RuneSelf && unicode.Is(unicode.M, r)
}

// normalized returns text in Unicode's NFKC form, so that a word matches
// whatever form it was written in: "naïve" precomposed or as i and a
// combining diaeresis, fullwidth letters as ASCII. ASCII text is returned
// as it is, at the cost of a scan.
func normalized(text string) string {
	for i := 0; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			return norm.NFKC.String(text)
		}
	}
	return text
}

func isJoiner(r rune) bool { return r == '_' || r == '-' }

// isHump reports whether a camelCase hump starts at rs[i]; appendHumps
// splits at the same places.
func isHump(rs []rune, i int) bool {
	lowerToUpper := (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])) && unicode.IsUpper(rs[i])
	// An acronym's plural (PRs, URLs, IDs) is one word, not an acronym
	// followed by a hump.
	plural := i+2 == len(rs) && rs[i+1] == 's'
	acronymEnd := i+1 < len(rs) && unicode.IsUpper(rs[i-1]) && unicode.IsUpper(rs[i]) && unicode.IsLower(rs[i+1]) && !plural
	return lowerToUpper || acronymEnd
}

// queryWords returns the words of a query as appendTerms splits them,
// lower-cased, stop words dropped, not stemmed.
func queryWords(text string) []string {
	var words []string
	for _, t := range appendTermsFunc(nil, text, false, func(dst []string, w string) []string {
		w = strings.ToLower(w)
		if dropped(w) {
			return dst
		}
		return append(dst, w)
	}) {
		if !strings.Contains(t, " ") {
			words = append(words, t)
		}
	}
	return words
}

// oneEdit reports whether a and b, of at least 5 bytes, differ by one edit:
// a byte inserted, deleted or replaced, or two neighbouring bytes swapped.
func oneEdit(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	switch len(b) - len(a) {
	case 0:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		if i == len(a) {
			return false // equal
		}
		if a[i+1:] == b[i+1:] {
			return true
		}
		return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	case 1:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		return a[i:] == b[i+1:]
	}
	return false
}

// dropped reports whether the lower-cased word w is no term: a stop word or
// a number.
func dropped(w string) bool { return lexicon.StopWord(w) || number(w) }

// number reports whether w is all digits: a value a request carries (an
// order number, a count, an hour), not a word of what a tool does, so
// neither the index nor a query keeps it. A word with digits in it (2fa,
// oauth2) is a word.
func number(w string) bool {
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return w != ""
}
