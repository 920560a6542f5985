package toolsearch

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/provider"
	"github.com/beam-agents/toolreg/registry"
)

// Name is the meta-tool's name, as its manifest declares it.
const Name = "search_tools"

//go:embed search_tools.yaml
var manifest embed.FS

// Spec returns the meta-tool's contract, loaded and validated from its
// embedded manifest like any manifest. Each call returns a Spec of its own.
func Spec() *toolreg.Spec {
	specs, err := loader.LoadFS(manifest, "search_tools.yaml")
	if err != nil || len(specs) != 1 {
		panic(fmt.Sprintf("toolsearch: the embedded search_tools.yaml does not load: %v", err))
	}
	return specs[0]
}

// Args are search_tools' arguments, as its manifest declares them.
type Args struct {
	Query    string   `json:"query"`
	Tags     []string `json:"tags"`
	ReadOnly bool     `json:"read_only"`
	Limit    int      `json:"limit"`
}

// Result is what search_tools returns: the matching tools, best first, each
// in the provider form Bind was given, as that provider's tools list takes
// it. It encodes as {"tools":[...]}.
type Result struct {
	Tools []json.RawMessage `json:"tools"`
	names []string
}

// FoundTools returns the names of the tools in r, in its order. An activation
// limited to an offered set (runner.WithOffered) offers them for the rest of
// its turn when search_tools returns r.
func (r Result) FoundTools() []string { return r.names }

// Bind binds search_tools in b to a search over the contracts b was made with
// (every one but search_tools itself), answering in the provider form named
// form (provider.Forms). b must hold search_tools' contract: append Spec() to
// the specs given to bindings.New, else b.Bind refuses the binding.
//
// An unknown form is refused with a *provider.UnknownFormError. A found tool
// the form cannot express (openai-strict and an open map param) is left out
// of the answer; `toolreg vet -provider` reports such tools ahead.
//
// opts configure the ranking as NewSearcher's do: with none, the offline
// ranking (registry.Search); with WithEmbedder, embeddings fused with it.
// Give it the options `toolreg search` reads from the environment,
// openaiembed.OptionsFromEnv, so that the model and the command line rank
// alike.
func Bind(b *bindings.Binder, form string, opts ...Option) error {
	if !provider.Known(form) {
		return &provider.UnknownFormError{Name: form}
	}
	reg := registry.New()
	for _, s := range b.Specs() {
		if s == nil || s.Name == Name {
			continue
		}
		if err := reg.Register(toolreg.NewTool(s)); err != nil {
			var dup *toolreg.DuplicateToolError
			if errors.As(err, &dup) {
				continue // b.Bind reports it
			}
			return err
		}
	}
	s := NewSearcher(reg, opts...)
	bindings.ReadOnly(b, Name, func(ctx context.Context, a Args) (Result, error) {
		return search(ctx, s, form, a), nil
	})
	return nil
}

// search runs one search_tools call and tells ctx's hook what it found.
func search(ctx context.Context, s *Searcher, form string, a Args) Result {
	// The caller finds only what it may call: the anonymous caller, only
	// the tools that declare no scopes.
	p, _ := toolreg.PrincipalFrom(ctx)
	if p == nil {
		p = &toolreg.Principal{}
	}
	if f, ok := ctx.Value(formKey{}).(string); ok {
		form = f
	}
	ms := s.Search(ctx, registry.Query{Text: a.Query, Tags: a.Tags, ReadOnly: a.ReadOnly, Limit: a.Limit, Principal: p})
	res := Result{Tools: make([]json.RawMessage, 0, len(ms))}
	for _, m := range ms {
		r, err := provider.Render(form, m.Tool.Spec())
		if err != nil {
			continue // see Bind
		}
		res.Tools = append(res.Tools, r.JSON)
		res.names = append(res.names, m.Tool.Name())
	}
	if f, ok := ctx.Value(foundKey{}).(func([]string)); ok && len(res.names) > 0 {
		f(res.names)
	}
	return res
}

type foundKey struct{}

type formKey struct{}

// WithForm returns ctx asking search_tools, when it runs with ctx, to answer
// in provider form form, whatever form Bind was given: a server that speaks
// one protocol (mcpserver, MCP's) answers in its form however the tool was
// bound.
func WithForm(ctx context.Context, form string) context.Context {
	return context.WithValue(ctx, formKey{}, form)
}

// WithFound returns ctx carrying f, which search_tools calls with the names
// of the tools it found, before it returns them, when it runs with ctx. A
// server that keeps a tool set per client (mcpserver.WithToolSearch) grows it
// this way.
func WithFound(ctx context.Context, f func(names []string)) context.Context {
	return context.WithValue(ctx, foundKey{}, f)
}
