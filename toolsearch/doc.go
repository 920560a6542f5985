// Package toolsearch is the search_tools meta-tool: a read-only tool,
// declared by a manifest like any other (search_tools.yaml, embedded), with
// which a model finds the tools it was not shown and gets their schemas in
// its provider's form, ready to call.
//
// A large registry cannot show the model every schema each turn: it costs
// tokens and models choose worse among many. Offer a turn a few tools plus
// search_tools (runner.WithOffered); the model searches, the tools it finds
// are offered for the rest of the turn, and it calls them:
//
//	specs = append(specs, toolsearch.Spec())
//	b := bindings.New(specs)
//	... // the other bindings
//	if err := toolsearch.Bind(b, provider.OpenAI); err != nil { ... }
//	bound, err := b.Bind()
//
// The search is a Searcher over every contract the Binder holds but
// search_tools itself: registry.Search offline (BM25 with stemming, typo
// tolerance and WordNet expansion), and, given an Embedder (WithEmbedder; the
// one configuration is openaiembed.OptionsFromEnv, which `toolreg search`
// reads too), that ranking fused with the embeddings' by reciprocal rank
// fusion, tool vectors cached on disk by manifest digest (WithCacheDir); the
// embeddings add to the offline matches only the few tools nearest the query
// (and none below WithMinSimilarity's floor). When
// the embedder fails or times out, the search logs it and answers offline. It
// refuses nothing a registry would not: what it returns are contracts; a call
// of a found tool goes through the runner or Act like any other, with its
// arguments checked.
//
//	opts, err := openaiembed.OptionsFromEnv() // none unless TOOLREG_EMBED_MODEL is set
//	...
//	err = toolsearch.Bind(b, provider.OpenAI, opts...)
//
// mcpserver.WithToolSearch serves it over MCP with a tool set per session that
// grows as the client's model searches.
package toolsearch
