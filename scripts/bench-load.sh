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
#
#	scripts/bench-load.sh startup [runs]   (default 3)
#
# The startup form measures a server's start at 100, 1,000 and 10,000 tools
# (scripts/benchstartup: load, bind every tool, effector and MCP server
# built) against a bare YAML parse of the same files into maps, each in a
# process of its own, alternately: median wall time, peak memory (max RSS,
# from /usr/bin/time) and heap held after a GC, and each ratio to the parse;
# and the CPU time (user + system) of each process, since the loader and the
# MCP server use every core and the parse one: on a loaded machine the wall
# time ratio moves with the load, the CPU ratio less.
# The goals at 10,000 tools: time <= 2x, peak <= 4x, held <= 2x.
# BENCHSTARTUP_CPUPROFILE=file (or _MEMPROFILE) profiles one startup:
#	go run ./scripts/benchstartup startup DIR
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ${1:-} == startup ]]; then
	runs=${2:-3}
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
	go build -o "$dir/benchstartup" ./scripts/benchstartup
	median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
	echo "runs: $runs per cell (medians; machine: $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
	printf '%-7s %-8s %9s %10s %10s %7s   %s\n' tools mode wall-ms peak-MiB held-MiB cpu-s "ratio to parse (time, peak, held; cpu)"
	for n in 100 1000 10000; do
		mkdir "$dir/m$n"
		"$dir/benchstartup" write "$dir/m$n" "$n"
		for mode in parse startup; do : >"$dir/$mode.ns"; : >"$dir/$mode.rss"; : >"$dir/$mode.held"; : >"$dir/$mode.cpu"; done
		for ((r = 1; r <= runs; r++)); do
			for mode in parse startup; do
				/usr/bin/time -f '%M %U %S' -o "$dir/rss" "$dir/benchstartup" "$mode" "$dir/m$n" >"$dir/out"
				awk '{print $3}' "$dir/out" >>"$dir/$mode.ns"
				awk '{print $4}' "$dir/out" >>"$dir/$mode.held"
				awk '{print $1}' "$dir/rss" >>"$dir/$mode.rss"
				awk '{print $2 + $3}' "$dir/rss" >>"$dir/$mode.cpu"
			done
		done
		for mode in parse startup; do
			eval "${mode}_ns=$(median <"$dir/$mode.ns") ${mode}_rss=$(median <"$dir/$mode.rss") ${mode}_held=$(median <"$dir/$mode.held") ${mode}_cpu=$(median <"$dir/$mode.cpu")"
		done
		awk -v n="$n" -v pn="$parse_ns" -v pr="$parse_rss" -v ph="$parse_held" \
			-v sn="$startup_ns" -v sr="$startup_rss" -v sh="$startup_held" \
			-v pc="$parse_cpu" -v sc="$startup_cpu" 'BEGIN {
			printf "%-7d %-8s %9.1f %10.1f %10.1f %7.2f\n", n, "parse", pn / 1e6, pr / 1024, ph / 1048576, pc
			printf "%-7d %-8s %9.1f %10.1f %10.1f %7.2f   %.2fx %.2fx %.2fx; %s\n", n, "startup", sn / 1e6, sr / 1024, sh / 1048576, sc, sn / pn, sr / pr, sh / ph, (pc > 0 ? sprintf("%.2fx", sc / pc) : "-")
		}'
	done
	echo "load at the end: $(cut -d' ' -f1 /proc/loadavg)"
	exit 0
fi

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
