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
// The search is registry.Search (BM25 over names, descriptions, params, tags
// and keywords) over every contract the Binder holds but search_tools itself.
// It refuses nothing a registry would not: what it returns are contracts; a
// call of a found tool goes through the runner or Act like any other, with its
// arguments checked.
//
// mcpserver.WithToolSearch serves it over MCP with a tool set per session that
// grows as the client's model searches.
package toolsearch
