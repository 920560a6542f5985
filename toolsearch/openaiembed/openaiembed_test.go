package openaiembed_test

import (
	"bytes"
	"context"
	"encoding/json"
	"hash/fnv"
	"log/slog"
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
	"github.com/beam-agents/toolreg/internal/cli"
	"github.com/beam-agents/toolreg/internal/syncbuf"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/registry"
	"github.com/beam-agents/toolreg/toolsearch"
	"github.com/beam-agents/toolreg/toolsearch/openaiembed"
)

// concepts is the in-process server's "model": words of one concept get one
// dimension, so texts that share no word can still be alike, as with a real
// embedding model; every other word is hashed into dimensions of its own.
var concepts = map[string]int{
	"umbrella": 0, "rain": 0, "weather": 0, "forecast": 0, "sunny": 0,
	"money": 1, "refund": 1, "reimburse": 1, "payment": 1,
	"parcel": 2, "package": 2, "shipment": 2, "delivery": 2,
}

const dims = 64

func vectorOf(text string) []float64 {
	v := make([]float64, dims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !('a' <= r && r <= 'z') }) {
		if c, ok := concepts[w]; ok {
			v[c] += 3
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[8+int(h.Sum32())%(dims-8)]++
	}
	return v
}

// server is an OpenAI-compatible embeddings endpoint in process; it counts
// the texts it embedded, and fails or stalls when told to.
type server struct {
	*httptest.Server
	inputs atomic.Int64
	mode   atomic.Value // "ok", "fail", "stall"
	model  atomic.Value // the model the last request named
}

func newServer(t *testing.T) *server {
	s := &server{}
	s.mode.Store("ok")
	stop := make(chan struct{})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/embeddings") {
			http.NotFound(w, r)
			return
		}
		switch s.mode.Load() {
		case "fail":
			http.Error(w, `{"error":{"message":"model overloaded","type":"server_error"}}`, http.StatusInternalServerError)
			return
		case "stall":
			select {
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		var req struct {
			Input []string `json:"input"`
			Model string   `json:"model"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.model.Store(req.Model)
		s.inputs.Add(int64(len(req.Input)))
		type datum struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		out := struct {
			Object string  `json:"object"`
			Data   []datum `json:"data"`
			Model  string  `json:"model"`
		}{Object: "list", Model: req.Model}
		for i, in := range req.Input {
			out.Data = append(out.Data, datum{"embedding", i, vectorOf(in)})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(func() {
		close(stop)
		s.CloseClientConnections()
		s.Close()
	})
	return s
}

// embedder is the real openai-go client, pointed at s.
func (s *server) embedder() *openaiembed.Embedder {
	c := openai.NewClient(option.WithBaseURL(s.URL+"/v1/"), option.WithAPIKey("test"), option.WithMaxRetries(0))
	return openaiembed.New(c, "concepts-1")
}

func specs(t *testing.T) []*toolreg.Spec {
	t.Helper()
	specs, err := loader.Load("../testdata/tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

func registryOf(t *testing.T, specs []*toolreg.Spec) *registry.Registry {
	t.Helper()
	r := registry.New()
	for _, s := range specs {
		if err := r.Register(toolreg.NewTool(s)); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func names(ms []registry.Match) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Tool.Name())
	}
	return out
}

// textLogger is a slog logger writing to b.
func textLogger(b *syncbuf.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

const umbrella = "umbrella"

// The words of the query appear in no manifest; the model relates umbrella
// to weather, and the fused ranking puts get_weather first.
func TestEmbeddingsFindWhatTheWordsMiss(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	reg := registryOf(t, specs(t))
	q := registry.Query{Text: umbrella, Limit: 3}
	if got := names(reg.Search(q)); len(got) > 0 && got[0] == "get_weather" {
		t.Fatalf("offline, Search(%q) = %v: the test needs a query the words miss", umbrella, got)
	}
	s := toolsearch.NewSearcher(reg, toolsearch.WithEmbedder(srv.embedder()))
	got := names(s.Search(context.Background(), q))
	if len(got) == 0 || got[0] != "get_weather" {
		t.Errorf("with embeddings, Search(%q) = %v, want get_weather first", umbrella, got)
	}
	if m := srv.model.Load(); m != "concepts-1" {
		t.Errorf("the server was asked for model %v", m)
	}
	// The filters hold for the embeddings' ranking too.
	for _, m := range s.Search(context.Background(), registry.Query{Text: "money back for a payment", ReadOnly: true}) {
		if m.Tool.SideEffect() {
			t.Errorf("read-only search found %s", m.Tool.Name())
		}
	}
}

// A restart over the same manifests embeds only the query: the tools'
// vectors come from the cache on disk; a manifest changed where it is
// embedded is embedded again, alone.
func TestToolVectorsAreCachedOnDiskByTheManifestsDigest(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	dir := t.TempDir()
	ctx := context.Background()
	q := registry.Query{Text: umbrella}
	search := func(specs []*toolreg.Spec) []string {
		s := toolsearch.NewSearcher(registryOf(t, specs), toolsearch.WithEmbedder(srv.embedder()), toolsearch.WithCacheDir(dir))
		before := srv.inputs.Load()
		got := names(s.Search(ctx, q))
		// A second search of the same Searcher embeds only its query.
		s.Search(ctx, q)
		if n := srv.inputs.Load() - before; n < 2 {
			t.Fatalf("two searches embedded %d texts, want at least their 2 queries", n)
		}
		return got
	}
	ss := specs(t)
	first := search(ss)
	if n := srv.inputs.Load(); n != int64(len(ss))+2 {
		t.Fatalf("the first start embedded %d texts, want %d tools + 2 queries", n, len(ss))
	}
	before := srv.inputs.Load()
	if again := search(specs(t)); !slices.Equal(again, first) {
		t.Errorf("after a restart: %v, before: %v", again, first)
	}
	if n := srv.inputs.Load() - before; n != 2 {
		t.Errorf("a restart over unchanged manifests embedded %d texts, want the 2 queries only", n)
	}
	changed := specs(t)
	changed[0].Description = "Track a parcel and say where it is now."
	before = srv.inputs.Load()
	search(changed)
	if n := srv.inputs.Load() - before; n != 3 {
		t.Errorf("after one manifest changed, %d texts were embedded, want that tool and the 2 queries", n)
	}
}

// A crash mid-append leaves a torn last record: it is cut off, and that tool
// alone is embedded again; the file is whole afterwards.
func TestATornCacheRecordIsEmbeddedAgain(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	dir := t.TempDir()
	ctx := context.Background()
	q := registry.Query{Text: umbrella}
	newSearcher := func() *toolsearch.Searcher {
		return toolsearch.NewSearcher(registryOf(t, specs(t)), toolsearch.WithEmbedder(srv.embedder()), toolsearch.WithCacheDir(dir))
	}
	want := names(newSearcher().Search(ctx, q))
	files, _ := filepath.Glob(filepath.Join(dir, "*.vectors"))
	if len(files) != 1 {
		t.Fatalf("cache files %v, want one", files)
	}
	info, err := os.Stat(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(files[0], info.Size()-3); err != nil {
		t.Fatal(err)
	}
	before := srv.inputs.Load()
	if got := names(newSearcher().Search(ctx, q)); !slices.Equal(got, want) {
		t.Errorf("after the torn record: %v, want %v", got, want)
	}
	if n := srv.inputs.Load() - before; n != 2 {
		t.Errorf("after a torn last record, %d texts were embedded, want its tool and the query", n)
	}
	before = srv.inputs.Load()
	newSearcher().Search(ctx, q)
	if n := srv.inputs.Load() - before; n != 1 {
		t.Errorf("after the repair, %d texts were embedded, want the query only", n)
	}
}

// The server fails (an HTTP 500) or stalls past the timeout: the search
// answers with the offline ranking and logs why; for WithRetryAfter it does
// not call the server again.
func TestAFailingOrStalledServerFallsBackToTheOfflineRanking(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"fail", "stall"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t)
			srv.mode.Store(mode)
			reg := registryOf(t, specs(t))
			var l syncbuf.Buffer
			s := toolsearch.NewSearcher(reg, toolsearch.WithEmbedder(srv.embedder()),
				toolsearch.WithTimeout(200*time.Millisecond), toolsearch.WithLogger(textLogger(&l)))
			q := registry.Query{Text: "where is my parcel", Limit: 3}
			want := names(reg.Search(q))
			if len(want) == 0 {
				t.Fatal("the offline ranking finds nothing: the test proves nothing")
			}
			if got := names(s.Search(context.Background(), q)); !slices.Equal(got, want) {
				t.Errorf("Search = %v, want the offline ranking %v", got, want)
			}
			line := l.String()
			if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "searching offline") || !strings.Contains(line, "concepts-1") {
				t.Errorf("log: %q, want a warning naming the model and the fallback", line)
			}
			if mode == "stall" && !strings.Contains(line, "deadline exceeded") {
				t.Errorf("log: %q, want the timeout named", line)
			}
			srv.mode.Store("ok")
			before := srv.inputs.Load()
			if got := names(s.Search(context.Background(), q)); !slices.Equal(got, want) {
				t.Errorf("within the retry delay: %v, want the offline ranking %v", got, want)
			}
			if n := srv.inputs.Load() - before; n != 0 {
				t.Errorf("within the retry delay the server embedded %d texts, want none", n)
			}
		})
	}
}

// The caller giving up mid-call (its context cancelled, or its deadline
// passing) is a fallback too, not a hang. And it says nothing of the
// server: it does not keep the other searches offline for WithRetryAfter
// (before, one caller hanging up took the embedder away from every caller
// for 30 seconds). Only the searcher's own WithTimeout says the server is
// slow.
func TestACallerGivingUpFallsBackAndKeepsNoOneOffline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		log  string
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, "canceled"},
		{"past its deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, "deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t)
			srv.mode.Store("stall")
			reg := registryOf(t, specs(t))
			var l syncbuf.Buffer
			s := toolsearch.NewSearcher(reg, toolsearch.WithEmbedder(srv.embedder()), toolsearch.WithLogger(textLogger(&l)))
			ctx, cancel := tc.ctx()
			defer cancel()
			q := registry.Query{Text: "refund", Limit: 3}
			if got, want := names(s.Search(ctx, q)), names(reg.Search(q)); !slices.Equal(got, want) {
				t.Errorf("Search = %v, want the offline ranking %v", got, want)
			}
			if !strings.Contains(l.String(), tc.log) {
				t.Errorf("log: %q, want %q named", l.String(), tc.log)
			}
			srv.mode.Store("ok")
			before := srv.inputs.Load()
			next := registry.Query{Text: umbrella, Limit: 1}
			if got := names(s.Search(context.Background(), next)); !slices.Equal(got, []string{"get_weather"}) {
				t.Errorf("the next caller's search = %v, want [get_weather] from the embeddings (log %q)", got, l.String())
			}
			if srv.inputs.Load() == before {
				t.Error("the next caller's search did not call the server")
			}
		})
	}
}

// search_tools ranks with the options Bind was given.
func TestSearchToolsRanksWithTheEmbedderItWasGiven(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	reg := registryOf(t, specs(t))
	s := toolsearch.NewSearcher(reg, toolsearch.WithEmbedder(srv.embedder()))
	if got := names(s.Search(context.Background(), registry.Query{Text: umbrella, Limit: 1})); !slices.Equal(got, []string{"get_weather"}) {
		t.Fatalf("Searcher: %v", got)
	}
	opts, err := openaiembed.OptionsFromEnv()
	if err != nil || opts != nil {
		t.Fatalf("OptionsFromEnv with no TOOLREG_EMBED_MODEL = %v, %v, want none", opts, err)
	}
}

// nearSpecs are tools of which three are about money, with side effects, and
// seven read-only ones about nothing the queries below ask for: a registry
// where the embeddings' nearest tools are few and the rest are noise.
func nearSpecs() []*toolreg.Spec {
	var ss []*toolreg.Spec
	for _, n := range []string{"refund_payment", "reimburse_expense", "send_money"} {
		ss = append(ss, &toolreg.Spec{Name: n, Description: "Move money: a payment, a refund.", SideEffect: true})
	}
	for _, n := range []string{"list_rooms", "get_profile", "read_log", "count_users", "show_menu", "find_song", "get_time"} {
		ss = append(ss, &toolreg.Spec{Name: n, Description: "Show the " + strings.ReplaceAll(n, "_", " ") + "."})
	}
	return ss
}

// The embeddings add to the offline matches only the few tools nearest the
// query of every tool its caller may be offered, whatever the filters keep:
// a read-only search for a refund, whose nearest tools all have side
// effects, finds nothing, as offline; a query near no tool finds at most
// those few, not as many as the limit asks; and with WithMinSimilarity,
// nothing. Before, every tool the filters kept was fused in, so a search
// never came back empty (toolreg search never exited 1), and search_tools
// offered a model its limit of unrelated tools.
func TestTheEmbeddingsAddOnlyTheToolsNearestTheQuery(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	reg := registryOf(t, nearSpecs())
	ctx := context.Background()
	refund := registry.Query{Text: "money back for a payment", ReadOnly: true}
	if got := names(reg.Search(refund)); len(got) != 0 {
		t.Fatalf("offline, the read-only search for a refund = %v, want nothing: the test proves nothing", got)
	}
	s := toolsearch.NewSearcher(reg, toolsearch.WithEmbedder(srv.embedder()))
	if got := names(s.Search(ctx, refund)); len(got) != 0 {
		t.Errorf("with embeddings, the read-only search for a refund = %v, want nothing: its nearest tools have side effects", got)
	}
	if got := names(s.Search(ctx, registry.Query{Text: "money back for a payment"})); len(got) < 3 || !slices.Contains(got[:3], "reimburse_expense") {
		t.Errorf("with embeddings, the search for a refund = %v, want the three money tools first", got)
	}
	nonsense := registry.Query{Text: "xyzzy plugh", Limit: 10}
	if got := names(reg.Search(nonsense)); len(got) != 0 {
		t.Fatalf("offline, %q = %v, want nothing", nonsense.Text, got)
	}
	if got := names(s.Search(ctx, nonsense)); len(got) > 3 {
		t.Errorf("with embeddings, %q = %v, want at most the 3 nearest tools", nonsense.Text, got)
	}
	floor := toolsearch.NewSearcher(reg, toolsearch.WithEmbedder(srv.embedder()), toolsearch.WithMinSimilarity(0.5))
	if got := names(floor.Search(ctx, nonsense)); len(got) != 0 {
		t.Errorf("with a floor of 0.5, %q = %v, want nothing", nonsense.Text, got)
	}
	if got := names(floor.Search(ctx, registry.Query{Text: "reimburse", Limit: 3})); len(got) != 3 {
		t.Errorf("with a floor of 0.5, \"reimburse\" = %v, want the three money tools, near it", got)
	}
}

// `toolreg search` and search_tools rank alike from one configuration: the
// command, given TOOLREG_EMBED_* for a server, prints the ranking of the
// Searcher that OptionsFromEnv's options make (what toolsearch.Bind makes
// for search_tools), embeddings included: "umbrella" finds get_weather,
// which the words alone miss.
func TestToolregSearchAndSearchToolsRankAlikeFromTheEnvironment(t *testing.T) {
	srv := newServer(t)
	t.Setenv(openaiembed.EnvModel, "concepts-1")
	t.Setenv(openaiembed.EnvBaseURL, srv.URL+"/v1/")
	t.Setenv(openaiembed.EnvAPIKey, "test")
	t.Setenv(openaiembed.EnvCacheDir, "off")
	opts, err := openaiembed.OptionsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	s := toolsearch.NewSearcher(registryOf(t, specs(t)), opts...)
	for _, q := range []string{umbrella, "money back for a payment", "where is my parcel"} {
		var stdout, stderr bytes.Buffer
		if code := cli.Main([]string{"search", "-n", "3", q, "../testdata/tools.yaml"}, &stdout, &stderr); code != 0 {
			t.Fatalf("toolreg search %q exited %d: %s", q, code, stderr.String())
		}
		var got []string
		for line := range strings.Lines(stdout.String()) {
			// file:line:col: name (kind): description
			_, rest, _ := strings.Cut(line, ": ")
			name, _, _ := strings.Cut(rest, " ")
			got = append(got, name)
		}
		want := names(s.Search(context.Background(), registry.Query{Text: q, Limit: 3}))
		if !slices.Equal(got, want) {
			t.Errorf("toolreg search %q = %v, search_tools' ranking %v", q, got, want)
		}
		if q == umbrella && (len(got) == 0 || got[0] != "get_weather") {
			t.Errorf("toolreg search %q = %v, want get_weather first, from the embeddings (stderr %q)", q, got, stderr.String())
		}
	}
}
