package openaiembed_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/syncbuf"
	"github.com/beam-agents/toolreg/registry"
	"github.com/beam-agents/toolreg/toolsearch"
	"github.com/beam-agents/toolreg/toolsearch/openaiembed"
)

// datum is one embedding of an answer, as the API encodes it.
type datum struct {
	Object    string    `json:"object"`
	Index     int       `json:"index"`
	Embedding []float64 `json:"embedding"`
}

// answerOf is the answer of a sound server: one datum per input, in order.
func answerOf(inputs []string) []datum {
	var data []datum
	for i, in := range inputs {
		data = append(data, datum{"embedding", i, vectorOf(in)})
	}
	return data
}

// encode is the body of an answer with data.
func encode(data []datum) string {
	b, err := json.Marshal(map[string]any{"object": "list", "model": "concepts-1", "data": data})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// scripted is an OpenAI-compatible embeddings endpoint in process that
// answers each request as answer says: the faulty servers. It counts the
// texts it was asked to embed.
type scripted struct {
	*httptest.Server
	inputs atomic.Int64
}

func newScripted(t *testing.T, answer func(r *http.Request, inputs []string) (status int, body string)) *scripted {
	s := &scripted{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.inputs.Add(int64(len(req.Input)))
		status, body := answer(r, req.Input)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(func() {
		s.CloseClientConnections()
		s.Close()
	})
	return s
}

func (s *scripted) embedder() *openaiembed.Embedder {
	c := openai.NewClient(option.WithBaseURL(s.URL+"/v1/"), option.WithAPIKey("test"), option.WithMaxRetries(0))
	return openaiembed.New(c, "concepts-1")
}

// An answer the search cannot rank by (a vector too many or too few, an
// index out of range or twice, an empty vector, vectors of two lengths, a
// value beyond float32, a body that is not JSON) is refused: the search
// answers offline and logs why, naming the model. Never is it used as if
// sound: a float32 overflowing to +Inf made every similarity NaN and the
// fused ranking the registration order, and a query vector of another length
// than the tools' dropped every tool from the embeddings' ranking, both
// without a word. An answer in another order than its inputs, each datum
// with its index, is sound: it ranks as the ordered one.
func TestAnAnswerTheSearchCannotRankByFallsBackToTheOfflineRanking(t *testing.T) {
	t.Parallel()
	q := registry.Query{Text: "umbrella for my parcel", Limit: 3}
	for _, tc := range []struct {
		name   string
		answer func(inputs []string) string
		log    string // what the warning says of the answer; "" for a sound one
	}{
		{"a vector too few", func(in []string) string { return encode(answerOf(in)[1:]) }, "no embedding for input 0"},
		{"a vector too many", func(in []string) string {
			return encode(append(answerOf(in), datum{"embedding", len(in), vectorOf("x")}))
		}, "embedding index"},
		{"an index twice", func(in []string) string {
			data := answerOf(append(in, in[0]))
			data[len(in)].Index = 0
			return encode(data)
		}, "embedding index 0"},
		{"an empty vector", func(in []string) string {
			data := answerOf(in)
			data[len(in)-1].Embedding = []float64{}
			return encode(data)
		}, "empty vector"},
		{"vectors of two lengths", func(in []string) string {
			data := answerOf(in)
			data[len(in)-1].Embedding = data[len(in)-1].Embedding[:dims/2]
			return encode(data)
		}, "lengths"},
		{"the query's vector of another length than the tools'", func(in []string) string {
			data := answerOf(in)
			if len(in) == 1 && in[0] == q.Text {
				data[0].Embedding = data[0].Embedding[:dims/2]
			}
			return encode(data)
		}, "length"},
		{"a value beyond float32", func(in []string) string {
			data := answerOf(in)
			data[0].Embedding[3] = 1e39
			return encode(data)
		}, "not finite"},
		{"a body cut short", func(in []string) string { return encode(answerOf(in))[:40] }, "parsing response json"},
		{"an HTML page", func(in []string) string { return "<html>gateway</html>" }, "parsing response json"},
		{"data in reverse order", func(in []string) string {
			data := answerOf(in)
			slices.Reverse(data)
			return encode(data)
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newScripted(t, func(_ *http.Request, in []string) (int, string) { return http.StatusOK, tc.answer(in) })
			reg := registryOf(t, specs(t))
			var l syncbuf.Buffer
			s := toolsearch.NewSearcher(reg, toolsearch.WithEmbedder(srv.embedder()), toolsearch.WithLogger(textLogger(&l)))
			got := names(s.Search(context.Background(), q))
			offline := names(reg.Search(q))
			if tc.log == "" {
				// The sound server's ranking, which is not the offline one.
				sound := newServer(t)
				want := names(toolsearch.NewSearcher(registryOf(t, specs(t)), toolsearch.WithEmbedder(sound.embedder())).Search(context.Background(), q))
				if slices.Equal(want, offline) {
					t.Fatalf("the embeddings' ranking is the offline one, %v: the test proves nothing", want)
				}
				if !slices.Equal(got, want) || l.String() != "" {
					t.Errorf("Search = %v, log %q; want %v as from a server answering in order, no warning", got, l.String(), want)
				}
				return
			}
			if !slices.Equal(got, offline) {
				t.Errorf("Search = %v, want the offline ranking %v", got, offline)
			}
			line := l.String()
			if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "searching offline") || !strings.Contains(line, "concepts-1") || !strings.Contains(line, tc.log) {
				t.Errorf("log: %q, want a warning naming the model, the fallback and %q", line, tc.log)
			}
		})
	}
}

// The model behind a name changed the length of its vectors (redeployed, or
// served by another server): the tools' vectors cached at the old length are
// embedded again at the new one, and the search ranks as without a cache,
// instead of leaving out, silently, every tool cached. The new vectors stay:
// the next start embeds the query alone.
func TestToolVectorsCachedAtAnotherLengthAreEmbeddedAgain(t *testing.T) {
	t.Parallel()
	var length atomic.Int64
	length.Store(dims / 2)
	srv := newScripted(t, func(_ *http.Request, in []string) (int, string) {
		data := answerOf(in)
		for i := range data {
			data[i].Embedding = data[i].Embedding[:length.Load()]
		}
		return http.StatusOK, encode(data)
	})
	dir := t.TempDir()
	ctx := context.Background()
	q := registry.Query{Text: umbrella, Limit: 3}
	ss := specs(t)
	var l syncbuf.Buffer
	search := func() []string {
		s := toolsearch.NewSearcher(registryOf(t, ss), toolsearch.WithEmbedder(srv.embedder()), toolsearch.WithCacheDir(dir), toolsearch.WithLogger(textLogger(&l)))
		return names(s.Search(ctx, q))
	}
	search()
	length.Store(dims)
	want := names(toolsearch.NewSearcher(registryOf(t, ss), toolsearch.WithEmbedder(srv.embedder())).Search(ctx, q))
	if len(want) == 0 || want[0] != "get_weather" {
		t.Fatalf("without a cache, Search(%q) = %v, want get_weather first: the test proves nothing", q.Text, want)
	}
	before := srv.inputs.Load()
	if got := search(); !slices.Equal(got, want) {
		t.Errorf("over a cache at the old length, Search = %v, want %v (log %q)", got, want, l.String())
	}
	if n := srv.inputs.Load() - before; n != int64(len(ss))+1 {
		t.Errorf("over a cache at the old length, %d texts were embedded, want the %d tools and the query", n, len(ss))
	}
	before = srv.inputs.Load()
	if got := search(); !slices.Equal(got, want) {
		t.Errorf("after the re-embedding, Search = %v, want %v", got, want)
	}
	if n := srv.inputs.Load() - before; n != 1 {
		t.Errorf("after the re-embedding, a start embedded %d texts, want the query only", n)
	}
}

// While one search embeds the tools (the first, over a slow server), another
// waits for it no longer than its own context: it answers offline when its
// deadline passes, with a log line, not when the first search is done. Its
// giving up keeps no one offline: once the server answers, the first search
// and those after rank with the embeddings.
func TestASearchWaitingForTheToolsEmbeddingStopsAtItsDeadline(t *testing.T) {
	t.Parallel()
	batch := make(chan struct{}) // closed when the tools' batch reached the server
	release := make(chan struct{})
	var once atomic.Bool
	srv := newScripted(t, func(r *http.Request, in []string) (int, string) {
		if len(in) > 1 {
			if once.CompareAndSwap(false, true) {
				close(batch)
			}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		return http.StatusOK, encode(answerOf(in))
	})
	reg := registryOf(t, specs(t))
	var l syncbuf.Buffer
	s := toolsearch.NewSearcher(reg, toolsearch.WithEmbedder(srv.embedder()), toolsearch.WithLogger(textLogger(&l)), toolsearch.WithTimeout(10*time.Second))
	q := registry.Query{Text: umbrella, Limit: 1}
	first := make(chan []string)
	go func() { first <- names(s.Search(context.Background(), q)) }()
	<-batch
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	got := names(s.Search(ctx, q))
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the waiting search took %v, past its deadline of 200ms", took)
	}
	if want := names(reg.Search(q)); !slices.Equal(got, want) {
		t.Errorf("the waiting search = %v, want the offline ranking %v", got, want)
	}
	if line := l.String(); !strings.Contains(line, "searching offline") || !strings.Contains(line, "deadline exceeded") {
		t.Errorf("log: %q, want a warning naming the deadline", line)
	}
	close(release)
	if got := <-first; !slices.Equal(got, []string{"get_weather"}) {
		t.Errorf("the first search = %v, want [get_weather]", got)
	}
	if got := names(s.Search(context.Background(), q)); !slices.Equal(got, []string{"get_weather"}) {
		t.Errorf("a search after = %v, want [get_weather]", got)
	}
}

// tooLong is how a server answers a text over its model's limit (OpenAI: a
// 400 invalid_request_error), for texts over 1000 bytes here.
func tooLong(_ *http.Request, in []string) (int, string) {
	for _, text := range in {
		if len(text) > 1000 {
			return http.StatusBadRequest, `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","param":"input","code":null}}`
		}
	}
	return http.StatusOK, encode(answerOf(in))
}

// served returns a Searcher over reg with srv's embedder, logging to the
// buffer it returns, after a first search the embeddings ranked: the server
// has served.
func served(t *testing.T, reg *registry.Registry, srv *scripted) (*toolsearch.Searcher, *syncbuf.Buffer) {
	t.Helper()
	l := new(syncbuf.Buffer)
	s := toolsearch.NewSearcher(reg, toolsearch.WithEmbedder(srv.embedder()), toolsearch.WithLogger(textLogger(l)))
	if got := names(s.Search(context.Background(), registry.Query{Text: umbrella, Limit: 1})); !slices.Equal(got, []string{"get_weather"}) {
		t.Fatalf("the first search = %v, want [get_weather] from the embeddings (log %q)", got, l.String())
	}
	return s, l
}

// A server that has served refusing one caller's query (too long for the
// model) says nothing of it serving others: that search answers offline,
// its log line cut to 200 bytes of the query, and the next search ranks
// with the embeddings at once. Before, the refusal kept the embedder
// offline for every caller for WithRetryAfter (30 seconds), so one hostile
// query a model sent to search_tools now and then took the embeddings from
// everyone.
func TestAQueryTheServerRefusesCostsOtherSearchesNothing(t *testing.T) {
	t.Parallel()
	srv := newScripted(t, tooLong)
	reg := registryOf(t, specs(t))
	s, l := served(t, reg, srv)
	ctx := context.Background()
	q := registry.Query{Text: umbrella, Limit: 1}
	long := registry.Query{Text: umbrella + strings.Repeat(" rain", 2000), Limit: 1}
	if got, want := names(s.Search(ctx, long)), names(reg.Search(long)); !slices.Equal(got, want) {
		t.Errorf("the refused search = %v, want the offline ranking %v", got, want)
	}
	if line := l.String(); !strings.Contains(line, "refused") || !strings.Contains(line, "maximum context length") || !strings.Contains(line, "(10008 bytes)") || len(line) > 2000 {
		t.Errorf("log: %q, want the refusal named and the query cut", line)
	}
	if got := names(s.Search(ctx, q)); !slices.Equal(got, []string{"get_weather"}) {
		t.Errorf("the next search = %v, want [get_weather] from the embeddings (log %q)", got, l.String())
	}
}

// A server that refuses everything (a model that is no embedding model, say)
// is a failure like any other: the search answers offline and the next
// within WithRetryAfter does not call it, where a refusal after the server
// served is one query's alone.
func TestAServerRefusingEverythingIsLeftAloneForAWhile(t *testing.T) {
	t.Parallel()
	srv := newScripted(t, func(_ *http.Request, _ []string) (int, string) {
		return http.StatusBadRequest, `{"error":{"message":"this model does not support embeddings","type":"invalid_request_error"}}`
	})
	reg := registryOf(t, specs(t))
	var l syncbuf.Buffer
	s := toolsearch.NewSearcher(reg, toolsearch.WithEmbedder(srv.embedder()), toolsearch.WithLogger(textLogger(&l)))
	q := registry.Query{Text: umbrella, Limit: 1}
	for i := range 3 {
		if got, want := names(s.Search(context.Background(), q)), names(reg.Search(q)); !slices.Equal(got, want) {
			t.Errorf("search %d = %v, want the offline ranking %v", i, got, want)
		}
	}
	if n := srv.inputs.Load(); n != 1 {
		t.Errorf("the server was sent %d texts over 3 searches, want the first query's alone (log %q)", n, l.String())
	}
}

// A tool whose text the server refuses (a description over the model's
// limit) is left out of the embeddings' ranking, once, by name in the log:
// the other tools are embedded (its batch split until the refused tool is
// alone), the search ranks with them, the offline ranking still finds the
// refused one, and later searches ask the server for the query alone.
// Before, the refused batch failed every search's embedding of the tools,
// every WithRetryAfter, for good.
func TestAToolTheServerRefusesIsLeftOutOfTheEmbeddingsAlone(t *testing.T) {
	t.Parallel()
	srv := newScripted(t, tooLong)
	ss := specs(t)
	long := &toolreg.Spec{Name: "summarize_contract", Description: strings.Repeat("Summarize a contract clause by clause. ", 40)}
	reg := registryOf(t, append(ss, long))
	s, l := served(t, reg, srv)
	ctx := context.Background()
	q := registry.Query{Text: umbrella, Limit: 1}
	if got := names(s.Search(ctx, registry.Query{Text: "summarize the contract", Limit: 3})); !slices.Contains(got, "summarize_contract") {
		t.Errorf("the refused tool's own search = %v, want it found by the offline ranking", got)
	}
	if got := strings.Count(l.String(), "refused a tool's text"); got != 1 || !strings.Contains(l.String(), "tool=summarize_contract") {
		t.Errorf("log: %q, want one line naming summarize_contract", l.String())
	}
	before := srv.inputs.Load()
	s.Search(ctx, q)
	if n := srv.inputs.Load() - before; n != 1 {
		t.Errorf("a later search sent the server %d texts, want the query alone", n)
	}
}

// A cache directory that cannot be made (its path runs through a file) is
// said once, with the directory, and costs nothing else: the search ranks
// with the embeddings, and keeps the vectors in memory, so the next search
// sends the server the query alone.
func TestACacheThatCannotBeOpenedKeepsVectorsInMemory(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := newServer(t)
	var l syncbuf.Buffer
	dir := filepath.Join(file, "cache")
	s := toolsearch.NewSearcher(registryOf(t, specs(t)), toolsearch.WithEmbedder(srv.embedder()), toolsearch.WithCacheDir(dir), toolsearch.WithLogger(textLogger(&l)))
	q := registry.Query{Text: umbrella, Limit: 1}
	for i := range 2 {
		before := srv.inputs.Load()
		if got := names(s.Search(context.Background(), q)); !slices.Equal(got, []string{"get_weather"}) {
			t.Fatalf("search %d = %v, want [get_weather] from the embeddings (log %q)", i, got, l.String())
		}
		if n := srv.inputs.Load() - before; i == 1 && n != 1 {
			t.Errorf("the second search sent the server %d texts, want the query alone", n)
		}
	}
	if line := l.String(); strings.Count(line, "no vector cache on disk") != 1 || !strings.Contains(line, dir) {
		t.Errorf("log: %q, want one warning naming %s", line, dir)
	}
}

// A caller who may be offered no tool (each needs a scope it lacks) finds
// nothing, and its search calls no embedding server: there is nothing to
// rank, and the query would only cost a round trip.
func TestASearchOfferingNoToolCallsNoServer(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	spec := &toolreg.Spec{Name: "get_weather", Description: "Get the weather forecast.", Scopes: []string{"weather:read"}}
	s := toolsearch.NewSearcher(registryOf(t, []*toolreg.Spec{spec}), toolsearch.WithEmbedder(srv.embedder()))
	if got := s.Search(context.Background(), registry.Query{Text: umbrella, Principal: &toolreg.Principal{}}); len(got) != 0 {
		t.Errorf("Search = %v, want nothing", names(got))
	}
	if n := srv.inputs.Load(); n != 0 {
		t.Errorf("the server was sent %d texts, want none", n)
	}
}
