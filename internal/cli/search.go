package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/provider"
	"github.com/beam-agents/toolreg/registry"
	"github.com/beam-agents/toolreg/toolsearch"
	"github.com/beam-agents/toolreg/toolsearch/openaiembed"
)

var searchCommand = &command{
	name:  "search",
	args:  "QUERY [paths...]",
	short: "find the tools of a large manifest set by what they do",
	long: `Search loads and validates the tool manifests in paths, as vet does, and
prints the tools that best match QUERY, best first, one a line on stdout:

	file:line:col: name (read-only|side effect): description

The ranking is the one the search_tools meta-tool uses (toolsearch.Searcher),
offline by default: BM25 over each tool's name, title, tags, keywords,
description and params' names and descriptions, with English stemming, stop
words, one typo forgiven in a long word and the query's words expanded with
WordNet's related words (registry.Search). Quote a query of several words, and
write flags before it.

With TOOLREG_EMBED_MODEL set, tools are also ranked by an embedding model
through any OpenAI-compatible embeddings API, and the two rankings fused:
TOOLREG_EMBED_BASE_URL (such as http://localhost:11434/v1 for Ollama; default
OPENAI_BASE_URL, else OpenAI), TOOLREG_EMBED_API_KEY (default OPENAI_API_KEY),
TOOLREG_EMBED_CACHE (where tool vectors are cached, by manifest digest; default
toolreg/embeddings in the user's cache directory; off for none) and
TOOLREG_EMBED_TIMEOUT (default 5s) and TOOLREG_EMBED_MIN_SIMILARITY (how near,
in cosine similarity, a tool must be to the query to count; default no floor).
The embeddings add to the offline matches only the three tools nearest the
query, of every tool the caller may be offered whatever -read-only and -tag
keep. When the server fails or times out, the
search answers offline and says so on stderr. A service gives search_tools the
same configuration with openaiembed.OptionsFromEnv. An empty query ('') with -tag or -read-only
lists the tools those keep, in load order.

With -provider it prints the matches instead as a JSON array of tools in that
provider's form, as search_tools answers a model.

With -scopes it searches as a caller holding those comma-separated scopes
(-scopes '' for one holding none), as search_tools does for the principal
of its call: a tool whose manifest needs a scope the caller lacks is not
found. A tool that needs scopes shows them after its kind.

The exit status is 0 when a tool matches, 1 when none does or a manifest is
invalid (vet's findings are printed on stderr), and 2 on a usage error.
Paths default to ./manifests; with none given and no ./manifests, a QUERY that
names a file or directory is taken for a path written first, a usage error.
`,
	setup: func(fs *flag.FlagSet) func(*env, []string) int {
		limit := fs.Int("n", registry.DefaultSearchLimit, "print at most `n` tools")
		readOnly := fs.Bool("read-only", false, "only tools without side effects")
		tags := fs.String("tag", "", "only tools with every one of these comma-separated `tags`")
		form := fs.String("provider", "", "print the matches as JSON in this provider `form` ("+strings.Join(provider.Forms(), ", ")+")")
		var scopes *toolreg.Principal
		fs.Func("scopes", "search as a caller holding only these comma-separated `scopes`", func(v string) error {
			scopes = &toolreg.Principal{}
			for _, sc := range strings.Split(v, ",") {
				if sc = strings.TrimSpace(sc); sc != "" {
					scopes.Scopes = append(scopes.Scopes, sc)
				}
			}
			return nil
		})
		return func(e *env, args []string) int {
			filtered := *readOnly || strings.TrimSpace(*tags) != ""
			if len(args) == 0 || (strings.TrimSpace(args[0]) == "" && !filtered) {
				fmt.Fprintln(e.stderr, "toolreg search: no query: say what the tool should do, such as toolreg search 'refund a payment', or list tools by -tag with the query ''")
				return exitUsage
			}
			if *limit <= 0 {
				fmt.Fprintf(e.stderr, "toolreg search: -n %d: give a positive number of tools\n", *limit)
				return exitUsage
			}
			if *form != "" && !provider.Known(*form) {
				fmt.Fprintf(e.stderr, "toolreg search: %v\n", &provider.UnknownFormError{Name: *form})
				return exitUsage
			}
			opts, err := openaiembed.OptionsFromEnv()
			if err != nil {
				fmt.Fprintf(e.stderr, "toolreg search: %v\n", err)
				return exitUsage
			}
			opts = append(opts, toolsearch.WithLogger(slog.New(slog.NewTextHandler(e.stderr, nil))))
			query, paths := args[0], args[1:]
			if len(paths) == 0 && isPath(query) && !isPath(defaultPaths[0]) {
				fmt.Fprintf(e.stderr, "toolreg search: no query: %q is a path and there is no %s to search; write the query first, such as toolreg search 'refund a payment' %s\n", query, defaultPaths[0], query)
				return exitUsage
			}
			specs, ok := loadSpecs(e, "search", paths)
			if !ok {
				return exitFindings
			}
			r := registry.New()
			for _, s := range specs {
				if err := r.Register(toolreg.NewTool(s)); err != nil {
					reportErr(e, "search", err)
					return exitFindings
				}
			}
			q := registry.Query{Text: query, ReadOnly: *readOnly, Limit: *limit, Principal: scopes}
			for _, t := range strings.Split(*tags, ",") {
				if t = strings.TrimSpace(t); t != "" {
					q.Tags = append(q.Tags, t)
				}
			}
			ms := toolsearch.NewSearcher(r, opts...).Search(context.Background(), q)
			if len(ms) == 0 {
				fmt.Fprintf(e.stderr, "toolreg search: no tool matches %q%s\n", query, filtersText(q))
				return exitFindings
			}
			if *form != "" {
				return printRendered(e, *form, ms)
			}
			for _, m := range ms {
				kind := "read-only"
				if m.Tool.SideEffect() {
					kind = "side effect"
				}
				if sc := m.Tool.Spec().Scopes; len(sc) > 0 {
					kind += "; scopes " + strings.Join(sc, " ")
				}
				desc := strings.Join(strings.Fields(m.Tool.Description()), " ")
				fmt.Fprintf(e.stdout, "%s: %s (%s): %s\n", m.Tool.Spec().Pos, m.Tool.Name(), kind, desc)
			}
			return exitOK
		}
	},
}

// isPath reports whether name is a file or directory that exists.
func isPath(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// filtersText says which filters a search had, for its "no tool matches".
func filtersText(q registry.Query) string {
	if !q.ReadOnly && len(q.Tags) == 0 && q.Principal == nil {
		return ""
	}
	if !q.ReadOnly && len(q.Tags) == 0 {
		return " among the tools a caller with scopes " + scopesText(q.Principal) + " may call"
	}
	s := " among the"
	if q.ReadOnly {
		s += " read-only"
	}
	s += " tools"
	if len(q.Tags) > 0 {
		s += " tagged " + strings.Join(q.Tags, " and ")
	}
	if q.Principal != nil {
		s += " a caller with scopes " + scopesText(q.Principal) + " may call"
	}
	return s
}

// printRendered prints the matches in a provider's form, as a JSON array.
func printRendered(e *env, form string, ms []registry.Match) int {
	list := make([]json.RawMessage, 0, len(ms))
	status := exitOK
	for _, m := range ms {
		r, err := provider.Render(form, m.Tool.Spec())
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", m.Tool.Spec().Pos, err)
			status = exitFindings
			continue
		}
		list = append(list, r.JSON)
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(list); err != nil {
		fmt.Fprintf(e.stderr, "toolreg search: %v\n", err)
		return exitFindings
	}
	return status
}

// scopesText lists a -scopes principal's scopes, or says it holds none.
func scopesText(p *toolreg.Principal) string {
	if len(p.Scopes) == 0 {
		return "(none)"
	}
	return strings.Join(p.Scopes, ", ")
}
