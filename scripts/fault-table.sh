#!/usr/bin/env bash
# fault-table.sh: run internal/faulttest (under -race, twice: rows that
# came out the same both times are shown once) and write its summary table into
# README.md, between the "fault table" markers. Needs redis-server and the
# PostgreSQL server (Debian package postgresql).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
table=$(mktemp)
trap 'rm -f "$table"' EXIT
FAULTTEST_SUMMARY="$table" go test -race -count=2 ./internal/faulttest/
awk -v table="$table" '
	/<!-- fault table:/ { print; while ((getline l < table) > 0) print l; skip = 1; next }
	/<!-- end fault table -->/ { skip = 0 }
	!skip { print }
' README.md > README.md.new
mv README.md.new README.md
echo "README.md: fault table updated"
