#!/usr/bin/env bash
# bench-telemetry.sh: what the OpenTelemetry hooks cost Runner.Run and
# Effector.Process when nothing collects telemetry (issue 21: under 2%).
#
# It builds the runner and effector benchmarks twice, as shipped and with the
# tag toolreg_notelemetry (every hook compiled out: the baseline), runs the
# two builds alternately so both see the same machine load, and compares them
# with benchstat: old = compiled out, new = as shipped. The rows that matter
# are otel=global (the default: no provider set) and otel=noop (the no-op
# providers passed as options). The ...TelemetryHooks rows time the hooks
# alone (as shipped; compiled out they do nothing): their cpu-ns/op over the
# Run or Process row's is the share telemetry takes, a steadier figure than
# the difference of two noisy timings on a shared machine.
#
# Usage: scripts/bench-telemetry.sh [count] [benchtime]   (default 6, 1s)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-6}
benchtime=${2:-1s}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for pkg in runner effector; do
	go test -c -o "$dir/$pkg.on" "./$pkg"
	go test -c -tags toolreg_notelemetry -o "$dir/$pkg.off" "./$pkg"
done
bench() { # pkg build
	case $1 in
	runner) pat='^BenchmarkRunTelemetry(Hooks)?$/^otel=(global|noop)$' ;;
	effector) pat='^BenchmarkProcessTelemetry(Hooks)?$/^otel=(global|noop)$' ;;
	esac
	(cd "./$1" && "$dir/$1.$2" -test.run '^$' -test.bench "$pat" -test.benchmem -test.benchtime "$benchtime" -test.count 1)
}
echo "count $count, benchtime $benchtime; machine: $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
for ((i = 1; i <= count; i++)); do
	for pkg in runner effector; do
		# Alternate which build goes first, so neither always runs warm.
		if ((i % 2)); then order="off on"; else order="on off"; fi
		for build in $order; do
			bench "$pkg" "$build" >>"$dir/$build.txt"
		done
	done
done
echo "load at the end: $(cut -d' ' -f1 /proc/loadavg)"
cd "$dir" && go -C "$OLDPWD" tool benchstat "$dir/off.txt" "$dir/on.txt"
