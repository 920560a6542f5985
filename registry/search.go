package registry

import (
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/lexicon"
	"github.com/beam-agents/toolreg/internal/par"
)

// DefaultSearchLimit is how many matches Search returns when Query.Limit is
// not positive.
const DefaultSearchLimit = 10

// maxQueryBytes and maxQueryTerms bound what of one query is read and looked
// up, so that a hostile query (megabytes of words) costs a bounded amount of
// work. A person's or a model's query has a handful of words.
const (
	maxQueryBytes = 1024
	maxQueryTerms = 64
)

// Query is a search over a registry's tools: words to rank them by, and
// filters that keep or drop a tool whatever its rank.
type Query struct {
	// Text is the words to look for, in any language's letters and digits;
	// case, punctuation and word endings (Snowball English stemming) do not
	// matter, one typo in a word of five letters or more is forgiven, and
	// snake_case or camelCase words match their parts. Blank text lists the
	// tools the filters keep, in registration order, each with score 0; text
	// whose words are all too common to search by ("the", "what") or
	// numbers (a value, not what a tool does: "10", "88123") matches
	// nothing.
	Text string
	// ReadOnly keeps only tools without side effects: those a pipeline runs
	// inline.
	ReadOnly bool
	// Tags keeps only tools that carry every one of these tags (the
	// manifest's tags, compared without regard to case).
	Tags []string
	// Limit is the most matches returned; not positive means
	// DefaultSearchLimit.
	Limit int
	// Principal, when set, keeps only the tools it may call (see
	// Registry.ForPrincipal): a caller never finds a tool it may not call.
	// Nil keeps every tool, whatever its scopes.
	Principal *toolreg.Principal
}

// Keeps reports whether q's filters (ReadOnly, Tags, Principal) keep t,
// whatever its words: what a ranking of its own (toolsearch's embeddings)
// filters by. A remote tool withdrawn at run time (toolreg.Tool.Withdrawn)
// is kept by no query: it is not offered.
func (q Query) Keeps(t *toolreg.Tool) bool {
	return q.Offers(t) && q.filtersKeep(t)
}

// Offers reports whether t may be offered to q's caller at all, whatever
// q's ReadOnly and Tags keep: it is not withdrawn, and q's principal may
// call it. Search takes its floor over these tools (a tenth of the best of
// them), and toolsearch the nearest tools of its embeddings.
func (q Query) Offers(t *toolreg.Tool) bool {
	return t.Withdrawn() == nil && (q.Principal == nil || q.Principal.Allows(t.Spec()))
}

// filtersKeep reports whether q's ReadOnly and Tags keep t.
func (q Query) filtersKeep(t *toolreg.Tool) bool {
	if q.ReadOnly && t.SideEffect() {
		return false
	}
	for _, want := range q.Tags {
		if !slices.ContainsFunc(t.Spec().Tags, func(tag string) bool { return strings.EqualFold(tag, want) }) {
			return false
		}
	}
	return true
}

// Match is one tool a search found, with its score: higher is better; only
// comparable between matches of one search.
type Match struct {
	Tool  *toolreg.Tool
	Score float64
}

// Search ranks the registry's tools against q.Text and returns the best
// q.Limit of those q's filters keep, best first; tools with equal scores come
// in registration order, so a search repeated gives the same answer. A tool
// that matches none of the words is not returned, nor is a withdrawn remote
// tool (toolreg.Tool.Withdrawn).
//
// The ranking is BM25F over each tool's name, title, tags, keywords,
// description, and its params' names and descriptions (nested properties
// included): the name weighs most, then title, tags and keywords, then the
// description, params least, and many params do not dilute the rest; two
// neighbouring words of the query found side by side count as a phrase,
// above the same words apart. Words are stemmed
// (Snowball English) and stop words dropped. A query word the registry lacks
// also matches the registry's words one edit away (one typo, in a word of
// five letters or more that is no common English word: "contract" is not a
// typo of "contact"). Each query word is expanded with the words WordNet
// relates to it (synonyms and derived forms of its first senses, two levels
// of hypernyms, and the words of their definitions, each counting less than
// the last and all far less than the word itself: "rain" finds "weather"
// weakly; a word of a definition counts as evidence, not as matching the
// query's word), and with its nearest neighbours in GloVe's word vectors,
// the words used in the same contexts, antonyms left out ("dollars" finds
// "euro" and "currency"; weaker still, the farther the weaker). A tool's
// score is then scaled by the share of the query's words it matched, a word
// matched through a relation counting less than one matched itself, so that
// a tool answering the whole request outranks one matching a single word;
// matches below a tenth of the best are dropped, the best of every tool
// the caller may be offered (not withdrawn, allowed to q's principal),
// whatever q's ReadOnly and Tags keep, so that a filter leaving only such
// matches leaves none. Nothing is downloaded and no model
// runs: the WordNet and GloVe tables are embedded (package
// internal/lexicon).
//
// The index is built on the first Search, not at Register, so a registry
// that is never searched pays nothing for it; BuildSearchIndex builds it
// ahead. Tools registered later are added to it on the next Search. Search is
// safe for concurrent use with itself and every other read.
func (r *Registry) Search(q Query) []Match {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	idx := r.searchIndex()
	idx.mu.RLock()
	defer idx.mu.RUnlock()
	keep := func(doc int) bool { return q.Keeps(r.tools[doc]) }
	if strings.TrimSpace(q.Text) == "" {
		var out []Match
		for i := 0; i < idx.n && len(out) < limit; i++ {
			if keep(i) {
				out = append(out, Match{Tool: r.tools[i]})
			}
		}
		return out
	}
	sp := idx.score(idx.queryTerms(q.Text))
	defer scorePool.Put(sp)
	scores := *sp
	var best float64 // of every tool offered to q's caller: see below
	top := make([]Match, 0, min(limit, 64))
	full := func(s float64) bool { return len(top) == limit && s <= top[len(top)-1].Score }
	for doc, s := range scores {
		if s <= 0 || s <= best && full(s) {
			continue
		}
		t := r.tools[doc]
		if !q.Offers(t) {
			continue
		}
		best = max(best, s)
		if full(s) || !q.filtersKeep(t) {
			continue
		}
		// Insertion into the sorted top: strictly greater scores go first,
		// equal ones after (docs come in registration order).
		i, _ := slices.BinarySearchFunc(top, s, func(m Match, s float64) int {
			if m.Score >= s {
				return -1
			}
			return 1
		})
		if len(top) == limit {
			top = top[:limit-1]
		}
		top = slices.Insert(top, i, Match{Tool: t, Score: s})
	}
	// Matches far below the best are noise of expansion (a word related to
	// one of the query's, loosely): they are dropped. The best is that of
	// every tool q's caller may be offered (not withdrawn: the stand-ins for
	// an unavailable tool are still found; its principal may call it: a
	// search with q.Principal answers as its ForPrincipal view's does, and
	// says nothing of tools the caller cannot see), whatever q's ReadOnly
	// and Tags keep, so that a filter leaving only such matches leaves none.
	for i, m := range top {
		if m.Score < minRelativeScore*best {
			return top[:i]
		}
	}
	return top
}

// BuildSearchIndex builds the search index of every registered tool now,
// rather than on the first Search: for a service that wants its first search
// as fast as the others. It is safe for concurrent use with Search.
func (r *Registry) BuildSearchIndex() { r.searchIndex() }

// searchIndex returns the index, first adding the tools registered since it
// was last brought up to date.
func (r *Registry) searchIndex() *searchIndex {
	idx := &r.search
	idx.mu.RLock()
	current := idx.n == len(r.tools)
	idx.mu.RUnlock()
	if !current {
		idx.mu.Lock()
		idx.addAll(r.tools[idx.n:])
		idx.normalise()
		idx.mu.Unlock()
	}
	return idx
}

// Field weights: a word in a tool's name says more about what the tool is
// for than one in a param's description.
const (
	weightName      = 3
	weightLabel     = 2 // title, tags
	weightKeyword   = 2
	weightDesc      = 1
	weightParamName = 0.5
	weightParamDesc = 0.3
)

// Query term weights: the words the person wrote count most; a word of the
// registry one typo away from one of them, or that WordNet relates to one,
// counts less, the looser the relation the less.
var relationWeight = [...]float64{ // read-only
	lexicon.Form:      1,
	lexicon.Synonym:   0.25,
	lexicon.Derived:   0.25,
	lexicon.Hypernym:  0.15,
	lexicon.Hypernym2: 0.075,
	lexicon.Gloss:     0.1,
}

// weightNeighbour is the weight of the closest of a word's neighbours in
// GloVe's vectors (lexicon.Neighbours); a farther one counts less, down to an
// eighth of it.
const weightNeighbour = 0.25

const (
	// minRelativeScore is the least share of the best match's score a match
	// must reach to be returned.
	minRelativeScore = 0.1
	weightTypo       = 0.8
	// minTypoLen is the shortest word in which a typo is tolerated: in a
	// shorter one, one edit makes another word too often (cat, car, cut).
	minTypoLen = 5
	// maxExpandedTerms bounds the terms a query looks up in all.
	maxExpandedTerms = 256
)

// The index keeps a tool's terms in two groups of fields (BM25F): the head
// (name, title, tags, keywords, description), what the tool is, and the
// params, what it takes. A tool's head is normalised by its length against
// the mean head's, at BM25's usual b; its params by nothing, so that a tool
// with many params is not ranked down for a word of its name or
// description, as it was when one length counted both (a tool's params say
// little about how much of its head a word is).
const (
	groupHead = iota
	groupParams
	fieldGroups
)

// BM25's constants, at their usual values.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// searchIndex is an inverted index of the registry's first n tools. It only
// grows, as Register only appends; BM25's statistics (document count, lengths,
// document frequencies) are read at query time, so adding a tool never
// rebuilds what is there.
type searchIndex struct {
	mu       sync.RWMutex
	n        int
	ids      map[string]int32       // term -> its index in postings
	terms    []string               // by term id
	postings [][]posting            // by term id; each in document order
	lengths  [][fieldGroups]float64 // each tool's weighted length, by group of fields
	total    [fieldGroups]float64   // the sums of lengths
	// headNorm is, by tool, what its head's frequencies are multiplied by:
	// BM25's length normalisation, against the mean length of heads, which
	// normalise brings up to date as tools are added.
	headNorm []float32

	// The state of add, reused from tool to tool: building allocates a
	// string only for a term not seen before.
	scan   termScanner
	doc    int32
	weight float64
	length [fieldGroups]float64
	group  int // the group of the field being added
	emit   func(term []byte)
}

// posting is one tool's weighted frequency of a term, by group of fields.
type posting struct {
	doc int32
	tf  [fieldGroups]float32
}

// postingsOf returns the postings of term, or nil.
func (x *searchIndex) postingsOf(term string) []posting {
	if id, ok := x.ids[term]; ok {
		return x.postings[id]
	}
	return nil
}

// addTerm counts one occurrence of term, at the current weight, in the
// current document.
func (x *searchIndex) addTerm(term []byte) {
	id, ok := x.ids[string(term)]
	if !ok {
		id = int32(len(x.postings))
		t := string(term)
		x.ids[t] = id
		x.terms = append(x.terms, t)
		x.postings = append(x.postings, nil)
	}
	ps := x.postings[id]
	if len(ps) == 0 || ps[len(ps)-1].doc != x.doc {
		ps = append(ps, posting{doc: x.doc})
	}
	ps[len(ps)-1].tf[x.group] += float32(x.weight)
	x.postings[id] = ps
	x.length[x.group] += x.weight
}

// add indexes spec as document n.
func (x *searchIndex) add(spec *toolreg.Spec) {
	if x.ids == nil {
		x.ids = make(map[string]int32)
		x.emit = x.addTerm
	}
	x.doc, x.length, x.group = int32(x.n), [fieldGroups]float64{}, groupHead
	field := func(text string, weight float64, compound bool) {
		x.weight = weight
		x.scan.scan(text, compound, x.emit)
	}
	field(spec.Name, weightName, true)
	if a := spec.Annotations; a != nil {
		field(a.Title, weightLabel, true)
	}
	for _, t := range spec.Tags {
		field(t, weightLabel, true)
	}
	for _, k := range spec.Keywords {
		field(k, weightKeyword, true)
	}
	field(spec.Description, weightDesc, true)
	var params func(ps []*toolreg.Param)
	var schema func(s *toolreg.Schema)
	params = func(ps []*toolreg.Param) {
		for _, p := range ps {
			field(p.Name, weightParamName, false)
			schema(&p.Schema)
		}
	}
	schema = func(s *toolreg.Schema) {
		field(s.Description, weightParamDesc, false)
		if s.Items != nil {
			schema(s.Items)
		}
		if s.AdditionalProperties != nil {
			schema(s.AdditionalProperties)
		}
		params(s.Properties)
	}
	x.group = groupParams
	params(spec.Params)
	x.lengths = append(x.lengths, x.length)
	for g := range x.total {
		x.total[g] += x.length[g]
	}
	x.n++
}

// minShard is the fewest tools addAll gives a goroutine of its own: below
// it, merging a shard costs more than the goroutine saves.
const minShard = 512

// addAll indexes tools as the next documents. Thousands of tools are
// indexed in shards, one per processor, each a small index of its own,
// which are then merged into this one in order (merge). Loading the
// manifests is spread over the processors too (package loader), so a
// build in one goroutine would be a larger share of a load the more
// processors a machine has. The index built in shards is the one built
// tool by tool, to the bit (TestShardedIndexIsTheOneBuiltToolByTool). It
// returns how many shards it built, 1 when it added the tools itself.
func (x *searchIndex) addAll(tools []*toolreg.Tool) (shards int) {
	shards = min(runtime.GOMAXPROCS(0), len(tools)/minShard)
	if shards <= 1 {
		for _, t := range tools {
			x.add(t.Spec())
		}
		return 1
	}
	parts := make([]searchIndex, shards)
	par.Do(shards, func(i int) {
		for _, t := range tools[i*len(tools)/shards : (i+1)*len(tools)/shards] {
			parts[i].add(t.Spec())
		}
	})
	for i := range parts {
		x.merge(&parts[i])
	}
	return shards
}

// merge appends the documents of p, an index built apart, as the next
// ones. Since p's terms are in the order p first saw them, and its
// postings and lengths in document order, a term new to x gets the id
// adding p's documents one by one would have given it, its postings
// follow x's, and the sums of lengths are taken document by document, in
// the same order, so they round alike.
func (x *searchIndex) merge(p *searchIndex) {
	if x.ids == nil {
		x.ids = make(map[string]int32, len(p.ids))
		x.emit = x.addTerm
	}
	base := int32(x.n)
	for id, term := range p.terms {
		ps := p.postings[id]
		for i := range ps {
			ps[i].doc += base
		}
		g, ok := x.ids[term]
		if !ok {
			x.ids[term] = int32(len(x.postings))
			x.terms = append(x.terms, term)
			x.postings = append(x.postings, ps)
			continue
		}
		x.postings[g] = append(x.postings[g], ps...)
	}
	for _, l := range p.lengths {
		x.lengths = append(x.lengths, l)
		for g := range x.total {
			x.total[g] += l[g]
		}
	}
	x.n += p.n
	x.scan.absorb(&p.scan)
}

// normalise computes headNorm for the tools indexed so far.
func (x *searchIndex) normalise() {
	avg := x.total[groupHead] / float64(x.n)
	x.headNorm = slices.Grow(x.headNorm[:0], x.n)[:x.n]
	for doc, l := range x.lengths {
		x.headNorm[doc] = 1
		if avg > 0 { // else every head is stop words, and matches nothing
			x.headNorm[doc] = float32(1 / (1 - bm25B + bm25B*l[groupHead]/avg))
		}
	}
}

// scorePool holds score slices, so that a search allocates none: at 10,000
// tools one is 80 kB, and a service searching each turn would otherwise make
// the garbage collector run for them.
var scorePool = sync.Pool{New: func() any { return new([]float64) }}

// queryTerm is a term a search looks up, with the weight of its matches.
type queryTerm struct {
	term   string
	weight float64
	// words[l] has bit i set when the term is the query's word i or one
	// typo from it (level 0), or related to it (level 1 or 2, by how
	// closely: matchLevel); all 0 for a pair of words and a compound.
	words [matchLevels]uint64
}

// score returns every indexed tool's BM25 score for terms, by document, in a
// slice from scorePool that the caller puts back.
func (x *searchIndex) score(terms []queryTerm, nwords int) *[]float64 {
	sp := scorePool.Get().(*[]float64)
	if cap(*sp) < x.n {
		*sp = make([]float64, x.n)
	}
	*sp = (*sp)[:x.n]
	scores := *sp
	clear(scores)
	if x.n == 0 || x.total == [fieldGroups]float64{} {
		return sp
	}
	mp := maskPool.Get().(*[]uint64)
	defer maskPool.Put(mp)
	if cap(*mp) < matchLevels*x.n {
		*mp = make([]uint64, matchLevels*x.n)
	}
	*mp = (*mp)[:matchLevels*x.n]
	masks := *mp
	clear(masks)
	n := float64(x.n)
	for _, t := range terms {
		ps := x.postingsOf(t.term)
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := t.weight * math.Log(1+(n-df+0.5)/(df+0.5))
		for _, p := range ps {
			// BM25F: the head's frequency normalised by its length, the
			// params' not, then the two saturated together.
			tf := float64(p.tf[groupHead]*x.headNorm[p.doc] + p.tf[groupParams])
			scores[p.doc] += idf * tf * (bm25K1 + 1) / (tf + bm25K1)
			m := masks[matchLevels*int(p.doc) : matchLevels*int(p.doc)+matchLevels : matchLevels*int(p.doc)+matchLevels]
			m[0] |= t.words[0]
			m[1] |= t.words[1]
			m[2] |= t.words[2]
		}
	}
	// Coordination: a tool's score is scaled by the share of the query's
	// words it matched (itself, one typo away or related, each counted by
	// how closely: levelCredit), so that a tool answering the whole request
	// outranks one that matches one word many times or in its name. A query
	// of one word too: a tool that matched it only through a relation
	// ranks below one that matched it itself, and is dropped when far
	// below it.
	if nwords > 0 {
		for doc, s := range scores {
			if s > 0 {
				m := masks[matchLevels*doc : matchLevels*doc+matchLevels : matchLevels*doc+matchLevels]
				credit := levelCredit[0]*float64(bits.OnesCount64(m[0])) +
					levelCredit[1]*float64(bits.OnesCount64(m[1]&^m[0])) +
					levelCredit[2]*float64(bits.OnesCount64(m[2]&^(m[0]|m[1])))
				scores[doc] *= credit / float64(nwords)
			}
		}
	}
	return sp
}

// Coordination counts a query word a tool matches by how closely it
// matched: the word itself or one typo away fully, a synonym or derived form
// half, a hypernym a quarter ("support", two hypernyms above "order", is weak
// evidence that a support tool is about orders). Tuned on the tuning half:
// counting every match fully, as before, put a support tool first for "the
// status of order 88123".
const matchLevels = 3

var levelCredit = [matchLevels]float64{1, 0.5, 0.25} // read-only

// matchLevel returns the level of coordination of a query term of weight w:
// the weight says how it relates to the query's word (relationWeight,
// weightNeighbour, weightTypo).
func matchLevel(w float64) int {
	switch {
	case w >= weightTypo: // the word, or a typo of it
		return 0
	case w >= weightTypo*relationWeight[lexicon.Synonym]: // a synonym or derived form
		return 1
	}
	return 2
}

// maskPool holds the slices of which query words each tool matched, as
// scorePool holds scores.
var maskPool = sync.Pool{New: func() any { return new([]uint64) }}

// queryTerms returns the terms a query looks up, each once with its
// weight: the query's own terms (queryTermsOf), then for each of its words
// the registry's words one typo away when the registry lacks it and it is no
// common English word (lexicon.Known), then the registry's words WordNet
// relates to either (lexicon.Related) and their nearest neighbours in
// GloVe's vectors (lexicon.Neighbours).
func (x *searchIndex) queryTerms(text string) ([]queryTerm, int) {
	if len(text) > maxQueryBytes {
		text = text[:maxQueryBytes] // a torn last rune is dropped by appendTerms
	}
	var out []queryTerm
	at := make(map[string]int) // term -> its index in out
	var bit uint64
	add := func(term string, w float64) {
		if i, ok := at[term]; ok {
			out[i].weight = max(out[i].weight, w)
			out[i].words[matchLevel(w)] |= bit
			return
		}
		if _, ok := x.ids[term]; !ok || len(out) == maxExpandedTerms {
			return
		}
		at[term] = len(out)
		t := queryTerm{term: term, weight: w}
		t.words[matchLevel(w)] = bit
		out = append(out, t)
	}
	for _, t := range queryTermsOf(text) {
		add(t, 1)
	}
	expand := func(stem string, w float64) {
		b := bit
		for r, rel := range lexicon.Related(stem) {
			// A word of a definition is evidence for a tool, not an answer
			// to the query's word: it does not count as matching it (close,
			// "move so that an opening or passage is obstructed", is not
			// answered by a tool that opens).
			if rel == lexicon.Gloss {
				bit = 0
			}
			add(r, w*relationWeight[rel])
			bit = b
		}
		// A word used in the same contexts (GloVe's vectors) weakly
		// matches the query's word, the closer the more: "rain" reaches a
		// tool tagged weather, "dollars" one that converts currencies. In
		// coordination the two closest levels count as a synonym, the
		// others as a hypernym (matchLevel).
		for r, level := range lexicon.Neighbours(stem) {
			add(r, w*weightNeighbour*float64(level+1)/lexicon.Closeness)
		}
	}
	words := queryWords(text)
	words = words[:min(len(words), maxQueryTerms)]
	seen := map[string]bool{}
	n := 0
	for _, w := range words {
		stem := lexicon.Stem(w)
		if seen[stem] {
			continue
		}
		seen[stem] = true
		bit = 1 << (n % 64)
		n++
		add(stem, 1)
		if _, ok := x.ids[stem]; !ok && len(w) >= minTypoLen && !lexicon.Known(stem) {
			for l := len(w) - 1; l <= len(w)+1; l++ {
				for _, v := range x.scan.byLen[l] {
					if oneEdit(w, v) {
						st := x.scan.stems[v]
						add(st, weightTypo)
						expand(st, weightTypo)
					}
				}
			}
		}
		expand(stem, 1)
	}
	return out, min(n, 64)
}

// queryTermsOf returns the distinct terms of a query, in the order they
// first appear, at most maxQueryTerms of them.
func queryTermsOf(text string) []string {
	var terms []string
	seen := make(map[string]bool)
	for _, w := range appendTerms(nil, text, true) {
		if !seen[w] {
			seen[w] = true
			terms = append(terms, w)
			if len(terms) == maxQueryTerms {
				break
			}
		}
	}
	return terms
}
