#!/usr/bin/env bash
# Regenerates internal/lexicon/wordnet.bin, the WordNet table tool search
# expands queries with, from Debian's wordnet-base (apt-get install
# wordnet-base). Run from anywhere; commit the result with the change that
# needed it. internal/lexicon's TestTableIsBuiltFromWordNet fails while the
# committed table differs from what this derives.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${WORDNET_DIR:-/usr/share/wordnet}
if [ ! -f "$dir/data.noun" ]; then
	echo "lexicon-table: no WordNet database in $dir: apt-get install wordnet-base, or set WORDNET_DIR" >&2
	exit 1
fi
go run ./internal/lexicon/lexicontable -wordnet "$dir" -o internal/lexicon/wordnet.bin
