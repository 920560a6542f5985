package toolsearch

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/registry"
)

// Embedder turns texts into vectors whose cosine similarity says how alike
// their meanings are: a semantic ranker's model. Package
// toolsearch/openaiembed implements it for any OpenAI-compatible embeddings
// API (OpenAI, a local Ollama or vLLM).
type Embedder interface {
	// Model names the model. Vectors of two models are never compared: the
	// cache on disk keys them by it.
	Model() string
	// Embed returns one vector per text, in order, all of one length.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// ErrRefused is what an Embedder's error wraps when the server refused a
// text (too long for the model, say) rather than failed. Once the embedder
// has served, a search whose query is refused answers offline without
// keeping the embedder offline for WithRetryAfter, so one caller's query
// costs no other caller the embeddings; a tool whose text is refused is left
// out of the embeddings' ranking (the offline ranking still finds it), with
// a log line. openaiembed wraps it in an answer of status 400, 413 or 422.
var ErrRefused = errors.New("the embedder refused the text")

// Option configures a Searcher (and Bind, which makes one).
type Option func(*Searcher)

// WithEmbedder ranks with e's vectors as well as offline: the two rankings
// are fused by reciprocal rank fusion. The default is none: the offline
// ranking, registry.Search, alone.
func WithEmbedder(e Embedder) Option { return func(s *Searcher) { s.embedder = e } }

// WithCacheDir keeps the tools' vectors in a file under dir, one per model,
// keyed by the digest of what is embedded of each manifest, so that a restart
// or an unchanged manifest embeds nothing again. The default is no cache on
// disk: vectors are kept in memory, for the Searcher's life.
func WithCacheDir(dir string) Option { return func(s *Searcher) { s.cacheDir = dir } }

// WithTimeout bounds each call of the embedder (a query, a batch of tools);
// the default is 5 seconds. On a timeout the search falls back to the
// offline ranking.
func WithTimeout(d time.Duration) Option { return func(s *Searcher) { s.timeout = d } }

// WithRetryAfter is how long after a failure of the embedder searches stay
// offline without calling it, so that a dead server does not cost every
// search its timeout; the default is 30 seconds. A caller cancelling its
// search is no failure of the embedder.
func WithRetryAfter(d time.Duration) Option { return func(s *Searcher) { s.retryAfter = d } }

// WithMinSimilarity is how near, in cosine similarity, a tool's vector must
// be to the query's for the embeddings to count it at all; the default is no
// floor. An embedding model has nearest tools for any query, nonsense
// included, and where the unrelated begin depends on the model (about 0.3 for
// some, 0.7 for others): set it for the model you use, and a query no tool is
// near finds only what the offline ranking finds, often nothing.
func WithMinSimilarity(x float64) Option { return func(s *Searcher) { s.minSim = x } }

// WithLogger is where a fallback to the offline ranking is logged, at level
// Warn; the default is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(s *Searcher) { s.log = l } }

// Defaults of the options above, and of the fusion.
const (
	DefaultTimeout    = 5 * time.Second
	DefaultRetryAfter = 30 * time.Second
	// rrfK is reciprocal rank fusion's constant, at its usual value
	// (Cormack, Clarke and Buettcher, 2009).
	rrfK = 60
	// candidates is how deep each ranking is read for the fusion.
	candidates = 50
	// nearest is how many of the tools nearest the query, of every tool its
	// caller may be offered whatever the filters, the embeddings may add to
	// the offline ranking's matches; below them they only rerank those.
	nearest = 3
	// embedBatch is how many tools one call of the embedder embeds.
	embedBatch = 128
)

// Searcher is the ranking search_tools and `toolreg search` share: the
// offline ranking (registry.Search) and, with an Embedder, the embeddings'
// ranking fused with it. It is safe for concurrent use.
type Searcher struct {
	reg        *registry.Registry
	embedder   Embedder
	cacheDir   string
	timeout    time.Duration
	retryAfter time.Duration
	minSim     float64
	log        *slog.Logger

	mu       sync.Mutex
	downTill time.Time // no embedder calls before then
	now      func() time.Time

	// toolsLock guards vectors and cache: a lock (send to take, receive to
	// give back) that a search waits for no longer than its context, since
	// its holder may be waiting for the embedder.
	toolsLock chan struct{}
	vectors   map[[32]byte][]float32     // by toolDigest
	digests   map[*toolreg.Tool][32]byte // each tool's toolDigest, once: it hashes the tool's text
	refused   map[[32]byte]bool          // the tools whose text the embedder refused, by toolDigest
	cache     *vectorCache               // nil without WithCacheDir, or when it cannot be opened

	served atomic.Bool // the embedder has answered once
}

// NewSearcher returns a Searcher over reg's tools.
func NewSearcher(reg *registry.Registry, opts ...Option) *Searcher {
	s := &Searcher{reg: reg, timeout: DefaultTimeout, retryAfter: DefaultRetryAfter, log: slog.Default(), now: time.Now, toolsLock: make(chan struct{}, 1), minSim: math.Inf(-1)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Search returns the tools that best match q, best first, at most q.Limit
// (registry.DefaultSearchLimit when not positive), each kept by q's filters.
// Without an embedder it is reg.Search(q). With one, it fuses the offline
// ranking with the ranking by cosine similarity of the query's vector to each
// tool's (reciprocal rank fusion; Match.Score is the fused score); when the
// embedder fails or times out, it logs why at level Warn and returns the
// offline ranking. It never fails: a search still answers without the server.
//
// The embeddings rerank the offline ranking's matches, and add to them only
// the few tools nearest the query (nearest, 3) of every tool its caller may
// be offered, whatever q's ReadOnly and Tags keep, as the offline ranking's
// floor is taken: so a filter that leaves only tools far from the query
// leaves none, and a query near no tool finds at most those few (none above
// WithMinSimilarity's floor: none).
func (s *Searcher) Search(ctx context.Context, q registry.Query) []registry.Match {
	limit := q.Limit
	if limit <= 0 {
		limit = registry.DefaultSearchLimit
	}
	if s.embedder == nil || strings.TrimSpace(q.Text) == "" {
		return s.reg.Search(q)
	}
	wide := q
	wide.Limit = max(limit, candidates)
	offline := s.reg.Search(wide)
	semantic, err := s.semantic(ctx, q)
	if err != nil {
		s.log.Warn("toolsearch: the embedder failed; searching offline", "model", s.embedder.Model(), "query", clip(q.Text), "err", err)
		return offline[:min(limit, len(offline))]
	}
	fused := map[*toolreg.Tool]float64{}
	for i, m := range offline {
		fused[m.Tool] += 1 / float64(rrfK+i+1)
	}
	for i, m := range semantic {
		if _, matched := fused[m.tool]; matched || m.nearest {
			fused[m.tool] += 1 / float64(rrfK+i+1)
		}
	}
	order := make(map[*toolreg.Tool]int, len(fused)) // registration order, which breaks a tie
	for i, t := range s.reg.Tools() {
		if _, ok := fused[t]; ok {
			order[t] = i
		}
	}
	out := make([]registry.Match, 0, len(fused))
	for t, sc := range fused {
		out = append(out, registry.Match{Tool: t, Score: sc})
	}
	slices.SortFunc(out, func(a, b registry.Match) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(order[a.Tool], order[b.Tool]))
	})
	return out[:min(limit, len(out))]
}

// semanticMatch is a tool of the embeddings' ranking: nearest when it is
// one of the nearest tools of every tool the query's caller may be offered.
type semanticMatch struct {
	tool    *toolreg.Tool
	nearest bool
}

// semantic ranks the tools q's filters keep by cosine similarity to the
// query, the first candidates of them at or above the floor of
// WithMinSimilarity, embedding first the tools it has no vector for. A
// failure of the embedder, or its answer outlasting WithTimeout, keeps it
// uncalled for retryAfter; the caller's context ending (cancelled, or its
// deadline passing) is the caller giving up, no failure of the embedder;
// nor is the query refused by an embedder that has served before.
func (s *Searcher) semantic(ctx context.Context, q registry.Query) ([]semanticMatch, error) {
	s.mu.Lock()
	downTill := s.downTill
	s.mu.Unlock()
	if s.now().Before(downTill) {
		return nil, fmt.Errorf("it failed less than %v ago; not retried before %v", s.retryAfter, downTill.Format(time.RFC3339))
	}
	ranked, err := s.rank(ctx, q)
	if err != nil && ctx.Err() == nil && !(errors.Is(err, errQueryRefused) && s.served.Load()) {
		s.mu.Lock()
		s.downTill = s.now().Add(s.retryAfter)
		s.mu.Unlock()
	}
	return ranked, err
}

// errQueryRefused is the embedder refusing the query (ErrRefused), which says
// nothing of it serving others.
var errQueryRefused = errors.New("the query was refused")

// clip returns at most 200 bytes of a query, for a log line.
func clip(q string) string {
	if len(q) <= 200 {
		return q
	}
	return strings.ToValidUTF8(q[:200], "") + fmt.Sprintf("... (%d bytes)", len(q))
}

// rank is semantic's ranking. The query is embedded first, without the lock,
// so that concurrent searches do not queue for the embedder; its vector's
// length is the one every tool's must have.
func (s *Searcher) rank(ctx context.Context, q registry.Query) ([]semanticMatch, error) {
	tools := s.reg.Tools()
	var offered []*toolreg.Tool // every tool q's caller may be offered, whatever the filters
	for _, t := range tools {
		if q.Offers(t) {
			offered = append(offered, t)
		}
	}
	if len(offered) == 0 {
		return nil, nil // nothing to rank: no call
	}
	qv, err := s.embed(ctx, []string{q.Text})
	if errors.Is(err, ErrRefused) {
		return nil, fmt.Errorf("%w: %w", errQueryRefused, err)
	}
	if err != nil {
		return nil, err
	}
	select {
	case s.toolsLock <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for another search to embed the tools: %w", context.Cause(ctx))
	}
	defer func() { <-s.toolsLock }()
	if err := s.embedTools(ctx, tools, len(qv[0])); err != nil {
		return nil, err
	}
	type scored struct {
		t   *toolreg.Tool
		sim float64
		i   int // its place among the tools, which breaks a tie
	}
	all := make([]scored, 0, len(offered))
	for i, t := range offered {
		if v := s.vectors[s.digest(t)]; len(v) == len(qv[0]) {
			all = append(all, scored{t, cosine(qv[0], v), i})
		}
	}
	slices.SortFunc(all, func(a, b scored) int { return cmp.Or(cmp.Compare(b.sim, a.sim), cmp.Compare(a.i, b.i)) })
	var out []semanticMatch
	for i, sc := range all {
		if len(out) == candidates || sc.sim < s.minSim {
			break
		}
		if q.Keeps(sc.t) {
			out = append(out, semanticMatch{tool: sc.t, nearest: i < nearest})
		}
	}
	return out, nil
}

// embedTools gives every tool a vector of length dims (the query's): from
// memory, from the cache on disk, or from the embedder, in batches, each
// batch written to the cache as it comes. A vector of another length (the
// model behind the name changed) is embedded again, and the new one, written
// after it, is the one the cache reads.
func (s *Searcher) embedTools(ctx context.Context, tools []*toolreg.Tool, dims int) error {
	model := s.embedder.Model()
	if s.vectors == nil {
		s.vectors = map[[32]byte][]float32{}
		if s.cacheDir != "" {
			c, vs, err := openVectorCache(s.cacheDir, model)
			if err != nil {
				s.log.Warn("toolsearch: no vector cache on disk; vectors are kept in memory", "dir", s.cacheDir, "err", err)
			}
			s.cache = c
			for d, v := range vs {
				s.vectors[d] = v
			}
		}
	}
	var missing []*toolreg.Tool
	var digests [][32]byte
	listed := map[[32]byte]bool{} // two tools of one text are embedded once
	for _, t := range tools {
		d := s.digest(t)
		if v, ok := s.vectors[d]; (!ok || len(v) != dims) && !s.refused[d] && !listed[d] {
			missing = append(missing, t)
			digests = append(digests, d)
			listed[d] = true
		}
	}
	for start := 0; start < len(missing); start += embedBatch {
		end := min(start+embedBatch, len(missing))
		if err := s.embedSome(ctx, missing[start:end], digests[start:end], dims); err != nil {
			return err
		}
	}
	return nil
}

// embedSome embeds tools, of digests, into s.vectors and the cache. A batch
// the embedder refuses (ErrRefused: a tool's text too long for the model,
// say) is split in halves, down to the tool it refuses alone, which is left
// out of the embeddings' ranking, logged once.
func (s *Searcher) embedSome(ctx context.Context, tools []*toolreg.Tool, digests [][32]byte, dims int) error {
	texts := make([]string, 0, len(tools))
	for _, t := range tools {
		texts = append(texts, EmbeddingText(t.Spec()))
	}
	vs, err := s.embed(ctx, texts)
	if errors.Is(err, ErrRefused) { // the query, embedded first, was taken: a tool's text was refused
		if len(tools) == 1 {
			if s.refused == nil {
				s.refused = map[[32]byte]bool{}
			}
			s.refused[digests[0]] = true
			s.log.Warn("toolsearch: the embedder refused a tool's text; the embeddings leave the tool out, the offline ranking still finds it", "model", s.embedder.Model(), "tool", tools[0].Name(), "err", err)
			return nil
		}
		h := len(tools) / 2
		if err := s.embedSome(ctx, tools[:h], digests[:h], dims); err != nil {
			return err
		}
		return s.embedSome(ctx, tools[h:], digests[h:], dims)
	}
	if err != nil {
		return err
	}
	if len(vs[0]) != dims {
		return fmt.Errorf("the embedder returned vectors of length %d for the query and %d for tools: its vectors cannot be compared", dims, len(vs[0]))
	}
	for i, v := range vs {
		s.vectors[digests[i]] = v
	}
	if s.cache != nil {
		if err := s.cache.append(digests, vs); err != nil {
			s.log.Warn("toolsearch: the vector cache is not written; vectors are kept in memory", "file", s.cache.path, "err", err)
			s.cache = nil
		}
	}
	return nil
}

// embed calls the embedder within the timeout and checks its answer.
func (s *Searcher) embed(ctx context.Context, texts []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	vs, err := s.embedder.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	if len(vs) != len(texts) {
		return nil, fmt.Errorf("the embedder returned %d vectors for %d texts", len(vs), len(texts))
	}
	for i, v := range vs {
		switch {
		case len(v) == 0:
			return nil, fmt.Errorf("the embedder returned an empty vector for text %d of %d", i, len(texts))
		case len(v) != len(vs[0]):
			return nil, fmt.Errorf("the embedder returned vectors of lengths %d and %d for texts 0 and %d of %d", len(vs[0]), len(v), i, len(texts))
		}
		for j, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("the embedder returned %v, a value not finite, at %d of the vector of text %d of %d", x, j, i, len(texts))
			}
		}
	}
	s.served.Store(true) // an answer the search can rank by
	return vs, nil
}

// EmbeddingText is what of a tool's manifest is embedded: its name, title,
// description, tags, keywords and params' names and descriptions, one a
// line. Its digest, with the model's name, keys the tool's vector.
func EmbeddingText(spec *toolreg.Spec) string {
	var b strings.Builder
	b.WriteString(strings.ReplaceAll(spec.Name, "_", " "))
	if a := spec.Annotations; a != nil && a.Title != "" {
		b.WriteString("\n" + a.Title)
	}
	b.WriteString("\n" + spec.Description)
	if len(spec.Tags) > 0 {
		b.WriteString("\ntags: " + strings.Join(spec.Tags, ", "))
	}
	if len(spec.Keywords) > 0 {
		b.WriteString("\nkeywords: " + strings.Join(spec.Keywords, ", "))
	}
	for _, p := range spec.Params {
		b.WriteString("\n" + p.Name)
		if p.Schema.Description != "" {
			b.WriteString(": " + p.Schema.Description)
		}
	}
	return b.String()
}

// digest returns t's toolDigest, hashed the first time only; the caller
// holds toolsLock.
func (s *Searcher) digest(t *toolreg.Tool) [32]byte {
	d, ok := s.digests[t]
	if !ok {
		if s.digests == nil {
			s.digests = map[*toolreg.Tool][32]byte{}
		}
		d = toolDigest(s.embedder.Model(), t.Spec())
		s.digests[t] = d
	}
	return d
}

// toolDigest keys a tool's vector: the SHA-256 of the model's name and the
// tool's EmbeddingText, so that a manifest changed where it is embedded, or
// another model, is embedded again.
func toolDigest(model string, spec *toolreg.Spec) [32]byte {
	return sha256.Sum256([]byte(model + "\x00" + EmbeddingText(spec)))
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
