#!/usr/bin/env bash
# fault-table.sh [RUN]: run internal/faulttest (under -race, twice: rows that
# came out the same both times are shown once) and write its summary table into
# README.md, between the "fault table" markers. Needs redis-server and the
# PostgreSQL server (Debian package postgresql).
#
# With RUN, a `go test -run` pattern, it runs only the tests RUN selects and
# puts their rows in the table in place of the rows of the same scenarios,
# keeping the others, in the order a whole run gives them. For the NATS
# scenarios alone:
#
#	scripts/fault-table.sh '^(TestKillPoints|TestPausedOwner|TestContention)$/nats'
#
# (A pattern such as "/nats" alone would also run every test that has no
# subtests: its first part, empty, matches them all.)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
run=${1:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
table=$tmp/table
if [ -z "$run" ]; then
	FAULTTEST_SUMMARY="$table" go test -race -count=2 ./internal/faulttest/
else
	FAULTTEST_SUMMARY="$table" go test -race -count=2 -run "$run" ./internal/faulttest/
	if [ ! -s "$table" ]; then
		echo "fault-table.sh: -run $run ran no scenario; README.md left as it was" >&2
		exit 1
	fi
	# scenario prints each row's scenario, trimmed, a tab, and the row.
	scenario() { awk -F'|' '{ s = $2; gsub(/^ +| +$/, "", s); print s "\t" $0 }'; }
	tail -n +3 "$table" | scenario | cut -f1 > "$tmp/new"
	awk '/<!-- fault table:/ { f = 1; n = 0; next } /<!-- end fault table -->/ { f = 0 } f && ++n > 2' README.md |
		scenario | awk -F'\t' -v new="$tmp/new" 'BEGIN { while ((getline s < new) > 0) drop[s] = 1 } !($1 in drop) { print }' > "$tmp/kept"
	# Sorted by scenario, bytewise and stable, as the summary sorts them.
	{
		head -n 2 "$table"
		{ cat "$tmp/kept"; tail -n +3 "$table" | scenario; } | LC_ALL=C sort -s -t "$(printf '\t')" -k1,1 | cut -f2-
	} > "$tmp/merged"
	table=$tmp/merged
fi
awk -v table="$table" '
	/<!-- fault table:/ { print; while ((getline l < table) > 0) print l; skip = 1; next }
	/<!-- end fault table -->/ { skip = 0 }
	!skip { print }
' README.md > README.md.new
mv README.md.new README.md
echo "README.md: fault table updated"
