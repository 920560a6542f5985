#!/usr/bin/env bash
# bench-load.sh: how long the Go loader takes to load and validate 1,000
# single-tool YAML manifests, against the real cue CLI checking the same files:
#
#	cue vet -c -d '#Tool' schema.cue <the 1000 files>
#
# The two are timed in the same run, alternately, so both see the same machine
# load; the script prints each median wall time and loader/cue (the target is
# at most 0.5). It then reports the heap the loader retains after loading
# 10,000 manifests.
#
# Usage: scripts/bench-load.sh [runs]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-5}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/manifests"

# Build both first, so that no compile time is timed.
cue=$(go tool -n cue)
go test -c -o "$dir/loader.test" ./loader

# The loader benchmark's first run writes its 1,000 manifests into the empty
# directory, so cue vet checks the very files the loader loads.
TOOLREG_BENCH_DIR="$dir/manifests" "$dir/loader.test" -test.run '^$' \
	-test.bench '^BenchmarkLoad1000$' -test.benchtime 1x >/dev/null

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

: >"$dir/cue.ns"
: >"$dir/loader.ns"
: >"$dir/cue.cpu"
: >"$dir/loader.cpu"
for ((r = 1; r <= runs; r++)); do
	t0=$(now)
	/usr/bin/time -f '%U %S' -a -o "$dir/cue.cpu" \
		"$cue" vet -c -d '#Tool' schema.cue "$dir"/manifests/*.yaml
	t1=$(now)
	echo $((t1 - t0)) >>"$dir/cue.ns"

	# One process per run, loading once: like a service starting up, or
	# `toolreg vet` in CI. The benchmark reports the wall time of the load.
	TOOLREG_BENCH_DIR="$dir/manifests" /usr/bin/time -f '%U %S' -a -o "$dir/loader.cpu" \
		"$dir/loader.test" -test.run '^$' -test.bench '^BenchmarkLoad1000$' -test.benchtime 1x |
		awk '/^BenchmarkLoad1000/ {print $3}' >>"$dir/loader.ns"
done

cue_ns=$(median <"$dir/cue.ns")
loader_ns=$(median <"$dir/loader.ns")
cue_cpu=$(awk '{print $1 + $2}' "$dir/cue.cpu" | median)
loader_cpu=$(awk '{print $1 + $2}' "$dir/loader.cpu" | median)
echo "runs:                   $runs (medians; machine: $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
awk -v c="$cue_ns" -v l="$loader_ns" -v cc="$cue_cpu" -v lc="$loader_cpu" 'BEGIN {
	printf "cue vet -c -d #Tool:    %.3f s wall, %.2f s CPU (whole process)\n", c / 1e9, cc
	printf "loader.Load:            %.3f s wall, %.2f s CPU (whole test process)\n", l / 1e9, lc
	printf "loader / cue vet:       %.2f wall (target <= 0.50), %.2f CPU\n", l / c, lc / cc
}'

"$dir/loader.test" -test.run '^$' -test.bench '^BenchmarkLoad10000Heap$' -test.benchtime 1x |
	awk '/^BenchmarkLoad10000Heap/ {
		for (i = 1; i < NF; i++) {
			if ($(i+1) == "retained-B") printf "heap after loading 10,000 manifests, specs held:    %.1f MiB\n", $i / 1048576
			if ($(i+1) == "leftover-B") printf "heap after loading 10,000 manifests, specs dropped: %.1f KiB\n", $i / 1024
		}
	}'
