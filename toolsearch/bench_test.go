package toolsearch_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/registry"
	"github.com/beam-agents/toolreg/toolsearch"
)

// hashEmbedder is an Embedder in process: each word of a text adds to one
// of 64 dimensions. It stands for a server that answers at once, so that a
// benchmark times the Searcher's own work.
type hashEmbedder struct{}

func (hashEmbedder) Model() string { return "hash-64" }

func (hashEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 64)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%64]++
		}
		out[i] = v
	}
	return out, nil
}

// BenchmarkSearchWithEmbedder10000 times one Search with an embedder over
// 10,000 tools whose vectors are already embedded: what a search costs this
// process beside the embedding server's answer for the query.
func BenchmarkSearchWithEmbedder10000(b *testing.B) {
	nouns := []string{"invoice", "customer", "order", "ticket", "payment", "refund", "shipment", "report", "user", "file"}
	verbs := []string{"get", "list", "create", "update", "delete", "cancel", "send", "find"}
	reg := registry.New()
	for i := range 10_000 {
		v, n := verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)]
		spec := &toolreg.Spec{Name: fmt.Sprintf("%s_%s_%05d", v, n, i), Description: fmt.Sprintf("%s a %s by its id and return its details.", v, n)}
		if err := reg.Register(toolreg.NewTool(spec)); err != nil {
			b.Fatal(err)
		}
	}
	s := toolsearch.NewSearcher(reg, toolsearch.WithEmbedder(hashEmbedder{}))
	ctx := context.Background()
	q := registry.Query{Text: "refund the payment of an order", Limit: 10}
	if len(s.Search(ctx, q)) == 0 { // embeds the tools
		b.Fatal("no match")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.Search(ctx, q)
	}
}
