// Package openaiembed is a toolsearch.Embedder through openai-go's
// embeddings API, so that any OpenAI-compatible server (OpenAI, a local
// Ollama or vLLM) ranks tools by meaning, and OptionsFromEnv, the one
// configuration `toolreg search` and a service's search_tools read it from
// (TOOLREG_EMBED_MODEL, TOOLREG_EMBED_BASE_URL, TOOLREG_EMBED_API_KEY,
// TOOLREG_EMBED_CACHE, TOOLREG_EMBED_TIMEOUT, TOOLREG_EMBED_MIN_SIMILARITY).
//
// It refuses an answer that does not give exactly one vector per input; the
// Searcher then falls back to the offline ranking and logs why. The client
// OptionsFromEnv makes keeps openai-go's default retries (two, with backoff,
// on a failed connection, a 429 or a 5xx), within the searcher's timeout: a
// server that refuses connections costs the first search about a second
// before it answers offline.
package openaiembed
