// Command lexicontable writes internal/lexicon/wordnet.bin, the table of
// related words registry.Search expands queries with, from WordNet 3.0's
// database files (Debian's wordnet-base). scripts/lexicon-table.sh runs it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/beam-agents/toolreg/internal/lexicon"
)

func main() {
	dir := flag.String("wordnet", "/usr/share/wordnet", "the `directory` of WordNet 3.0's database files (index.noun, data.noun, ...)")
	out := flag.String("o", "internal/lexicon/wordnet.bin", "the `file` to write")
	flag.Parse()
	b, err := lexicon.Build(*dir, lexicon.DefaultBuildOptions)
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
