package openaiembed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/beam-agents/toolreg/toolsearch"
)

// Embedder is a toolsearch.Embedder served by an OpenAI-compatible
// embeddings API through openai-go.
type Embedder struct {
	client openai.Client
	model  string
}

var _ toolsearch.Embedder = (*Embedder)(nil)

// New returns an Embedder calling client's embeddings API with model (such
// as "text-embedding-3-small", or "nomic-embed-text" on Ollama).
func New(client openai.Client, model string) *Embedder {
	return &Embedder{client: client, model: model}
}

// Model returns the model's name.
func (e *Embedder) Model() string { return e.model }

// Embed returns one vector per text, in order. An answer of status 400, 413
// or 422 (a text too long for the model, say) is an error wrapping
// toolsearch.ErrRefused: the text was refused, the server did not fail.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	res, err := e.client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		Model:          openai.EmbeddingModel(e.model),
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	})
	if apiErr := (*openai.Error)(nil); errors.As(err, &apiErr) && slices.Contains([]int{400, 413, 422}, apiErr.StatusCode) {
		return nil, fmt.Errorf("openaiembed: %s: %w (%q): %w", e.model, toolsearch.ErrRefused, apiErr.Message, err)
	}
	if err != nil {
		return nil, fmt.Errorf("openaiembed: %s: %w", e.model, err)
	}
	out := make([][]float32, len(texts))
	for _, d := range res.Data {
		if d.Index < 0 || int(d.Index) >= len(texts) || out[d.Index] != nil {
			return nil, fmt.Errorf("openaiembed: %s: the server answered with embedding index %d for %d inputs", e.model, d.Index, len(texts))
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		out[d.Index] = v
	}
	for i, v := range out {
		if v == nil {
			return nil, fmt.Errorf("openaiembed: %s: the server answered with no embedding for input %d of %d", e.model, i, len(texts))
		}
	}
	return out, nil
}

// The environment variables OptionsFromEnv reads: the one configuration of
// `toolreg search` and of a service's search_tools.
const (
	// EnvModel names the embedding model; unset or empty, search is offline.
	EnvModel = "TOOLREG_EMBED_MODEL"
	// EnvBaseURL is the API's base URL, such as http://localhost:11434/v1
	// for Ollama; unset, openai-go's default (OPENAI_BASE_URL, else OpenAI).
	EnvBaseURL = "TOOLREG_EMBED_BASE_URL"
	// EnvAPIKey is the API key; unset, openai-go's default (OPENAI_API_KEY).
	EnvAPIKey = "TOOLREG_EMBED_API_KEY"
	// EnvCacheDir is where tool vectors are cached; unset, toolreg/embeddings
	// under the user's cache directory ($XDG_CACHE_HOME, ~/.cache); "off",
	// no cache on disk.
	EnvCacheDir = "TOOLREG_EMBED_CACHE"
	// EnvTimeout bounds each call, as a Go duration (2s); unset,
	// toolsearch.DefaultTimeout.
	EnvTimeout = "TOOLREG_EMBED_TIMEOUT"
	// EnvMinSimilarity is toolsearch.WithMinSimilarity's floor, a cosine
	// similarity from -1 to 1 (0.3, say); unset, no floor.
	EnvMinSimilarity = "TOOLREG_EMBED_MIN_SIMILARITY"
)

// OptionsFromEnv returns the toolsearch options the environment configures
// (the variables above): none when EnvModel is unset, so search stays
// offline; else an Embedder, its cache directory, its timeout and its floor
// of similarity. `toolreg
// search` calls it; a service gives what it returns to toolsearch.Bind, so
// that both rank alike. A malformed variable is an error naming it.
func OptionsFromEnv() ([]toolsearch.Option, error) {
	return optionsFrom(os.Getenv)
}

func optionsFrom(getenv func(string) string) ([]toolsearch.Option, error) {
	model := getenv(EnvModel)
	if model == "" {
		return nil, nil
	}
	var copts []option.RequestOption
	if u := getenv(EnvBaseURL); u != "" {
		copts = append(copts, option.WithBaseURL(u))
	}
	if k := getenv(EnvAPIKey); k != "" {
		copts = append(copts, option.WithAPIKey(k))
	}
	opts := []toolsearch.Option{toolsearch.WithEmbedder(New(openai.NewClient(copts...), model))}
	switch dir := getenv(EnvCacheDir); dir {
	case "off":
	case "":
		if base, err := os.UserCacheDir(); err == nil {
			opts = append(opts, toolsearch.WithCacheDir(filepath.Join(base, "toolreg", "embeddings")))
		}
	default:
		opts = append(opts, toolsearch.WithCacheDir(dir))
	}
	if t := getenv(EnvTimeout); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("openaiembed: %s=%q: want a positive duration, such as 2s", EnvTimeout, t)
		}
		opts = append(opts, toolsearch.WithTimeout(d))
	}
	if v := getenv(EnvMinSimilarity); v != "" {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || !(x >= -1 && x <= 1) {
			return nil, fmt.Errorf("openaiembed: %s=%q: want a cosine similarity from -1 to 1, such as 0.3", EnvMinSimilarity, v)
		}
		opts = append(opts, toolsearch.WithMinSimilarity(x))
	}
	return opts, nil
}
