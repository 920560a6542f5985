package registry

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// appendTerms appends to dst the terms of text: its words, split at
// punctuation, '_', '-' and camelCase humps, lower-cased, stop words dropped
// and plural endings removed; and each pair of neighbouring words ("support
// ticket"), so that a phrase outranks the same words scattered. With
// compound, a word written with '_', '-' or humps (refund_order, refundOrder)
// is also kept whole, lower-cased, so that a tool's exact name matches it
// best.
func appendTerms(dst []string, text string, compound bool) []string {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, " ")
	}
	var words []string
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	for _, chunk := range strings.FieldsFunc(text, func(r rune) bool { return !isWord(r) && r != '_' && r != '-' }) {
		start := len(words)
		for _, part := range strings.FieldsFunc(chunk, func(r rune) bool { return r == '_' || r == '-' }) {
			words = appendHumps(words, part)
		}
		if compound && len(words)-start > 1 {
			dst = append(dst, strings.ToLower(strings.Trim(chunk, "_-")))
		}
	}
	dst = append(dst, words...)
	for i := 1; i < len(words); i++ {
		dst = append(dst, words[i-1]+" "+words[i])
	}
	return dst
}

// appendHumps splits one word at its camelCase humps (quasarId: quasar, id;
// HTTPServer: http, server; oauth2Token: oauth2, token) and appends each part
// as a term.
func appendHumps(dst []string, word string) []string {
	rs := []rune(word)
	start := 0
	for i := 1; i < len(rs); i++ {
		if isHump(rs, i) {
			dst = appendTerm(dst, string(rs[start:i]))
			start = i
		}
	}
	return appendTerm(dst, string(rs[start:]))
}

func appendTerm(dst []string, w string) []string {
	w = strings.ToLower(w)
	if stopWords[w] {
		return dst
	}
	return append(dst, stem(w))
}

// stem removes an English plural ending (the "S stemmer", Harman 1991, with
// the -es of sibilants): invoices -> invoice, queries -> query, refunds ->
// refund, statuses -> status, branches -> branch; status, class and glass stay
// as they are.
func stem(w string) string {
	n := len(w)
	switch {
	case n <= 3:
		return w
	case strings.HasSuffix(w, "ies") && !strings.HasSuffix(w, "eies") && !strings.HasSuffix(w, "aies"):
		return w[:n-3] + "y"
	case hasAnySuffix(w, "sses", "tuses", "xes", "ches", "shes", "zzes"):
		return w[:n-2]
	case strings.HasSuffix(w, "es") && !strings.HasSuffix(w, "aes") && !strings.HasSuffix(w, "ees") && !strings.HasSuffix(w, "oes"):
		return w[:n-1]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "ss"):
		return w[:n-1]
	}
	return w
}

// stopWords are English words too common in tool descriptions and queries
// to say anything about a tool.
var stopWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`a an the of to for and or in on at by with from into as is are be been
		it its this that these those i me my we our you your they their them he she his her
		do does can could will would should please some any so if than then there s t`) {
		m[w] = true
	}
	return m
}()

func hasAnySuffix(w string, suffixes ...string) bool {
	for _, s := range suffixes {
		if strings.HasSuffix(w, s) {
			return true
		}
	}
	return false
}

// termScanner gives the terms appendTerms gives, in another order, to a
// function, as bytes it reuses: it is how the index is built without
// allocating per word. appendTerms is its reference; FuzzTermScanner checks
// they agree.
type termScanner struct {
	runes []rune
	word  []byte
	prev  []byte
	pair  []byte
	comp  []byte
}

// scan calls emit with each term of text; emit must not keep the bytes.
func (sc *termScanner) scan(text string, compound bool, emit func([]byte)) {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, " ")
	}
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

		words := 0
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
				if sc.wordOf(rs[from:i]) {
					words++
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
		if compound && words > 1 {
			sc.comp = sc.comp[:0]
			for _, r := range strings.Trim(chunk, "_-") {
				sc.comp = utf8.AppendRune(sc.comp, unicode.ToLower(r))
			}
			emit(sc.comp)
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
	if stopWords[string(sc.word)] {
		return false
	}
	sc.word = stemBytes(sc.word)
	return true
}

func isChunkRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-'
}

func isJoiner(r rune) bool { return r == '_' || r == '-' }

// isHump reports whether a camelCase hump starts at rs[i]; appendHumps
// splits at the same places.
func isHump(rs []rune, i int) bool {
	lowerToUpper := (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])) && unicode.IsUpper(rs[i])
	acronymEnd := i+1 < len(rs) && unicode.IsUpper(rs[i-1]) && unicode.IsUpper(rs[i]) && unicode.IsLower(rs[i+1])
	return lowerToUpper || acronymEnd
}

// stemBytes is stem on bytes, in place.
func stemBytes(w []byte) []byte {
	n := len(w)
	switch {
	case n <= 3:
		return w
	case hasSuffix(w, "ies") && !hasSuffix(w, "eies") && !hasSuffix(w, "aies"):
		return append(w[:n-3], 'y')
	case hasSuffix(w, "sses") || hasSuffix(w, "tuses") || hasSuffix(w, "xes") || hasSuffix(w, "ches") || hasSuffix(w, "shes") || hasSuffix(w, "zzes"):
		return w[:n-2]
	case hasSuffix(w, "es") && !hasSuffix(w, "aes") && !hasSuffix(w, "ees") && !hasSuffix(w, "oes"):
		return w[:n-1]
	case hasSuffix(w, "s") && !hasSuffix(w, "us") && !hasSuffix(w, "ss"):
		return w[:n-1]
	}
	return w
}

func hasSuffix(w []byte, suffix string) bool {
	return len(w) >= len(suffix) && string(w[len(w)-len(suffix):]) == suffix
}
