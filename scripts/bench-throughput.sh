#!/usr/bin/env bash
# bench-throughput.sh: issue 20's throughput figures, each beside the floor
# its benchmark writes in the same run.
#
# For each durable path it runs the benchmark (-count N) and prints, per
# sub-benchmark, the median intents/s and the ratio to the floor:
#   sqlite, redis, postgres: BenchmarkProcessWorkers (effector.Process from 1,
#     4, 16 and 64 workers on one store, and impl=store-batch100: the store's
#     native batches, ClaimBatch of 100 then CompleteBatch of those 100)
#     against 100 intents per transaction (or pipeline), written with the
#     same kind of ids (goal: >= 0.5x at 16 and 64 workers);
#   jsonl: effector/jsonl's BenchmarkServe (effector.Serve over durable
#     JSONL at 1 and 16 workers) against a copy that fsyncs once per 100
#     lines (goal: >= 0.5x);
#   serve: sqlitestore's BenchmarkServe (effector.Serve at 1 and 16 workers
#     over an in-memory JSONL stream, and over a JSONL file to a JSONL file,
#     into SQLite) against 100 claims then 100 completions per transaction
#     (issue 32's goal: >= 0.5x at 16 workers), each run of $SERVE_N
#     intents (default 8000: a fixed count, so that every row writes a
#     database of the same size); then pgstore's BenchmarkServe (over a
#     pgqueue queue and over a JSONL file into Postgres, against batch100
#     from as many goroutines as workers) and redisstore's BenchmarkServe
#     and BenchmarkServeDurable (over a Redis stream and over a JSONL file,
#     against pipeline100, on a server without and with appendfsync always);
#   vs-main: the serve rows and sqlitestore's Process rows (1, 16 and 64
#     workers, $PROCESS_N intents, default 2000) built from this tree and
#     from $BASELINE (default main, checked out in a temporary git worktree,
#     with this tree's BenchmarkServe copied in), run in turns, and each
#     row's median as a ratio of the baseline's.
# redis-server and postgres must be installed (the benchmarks start their own).
# The machine's load (uptime) is printed before and after: compare ratios,
# not absolute figures, on a shared machine.
#
# Usage: scripts/bench-throughput.sh [count] [benchtime] [paths...]
#   (default 3, 2s, all of: sqlite redis redis-durable postgres jsonl serve;
#   vs-main runs only when named;
#   redis-durable runs the Redis rows on a server with appendfsync always)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-3}
benchtime=${2:-2s}
shift $(($# < 2 ? $# : 2))
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(sqlite redis redis-durable postgres jsonl serve)
serve_n=${SERVE_N:-8000}
process_n=${PROCESS_N:-2000}

# ratios reads benchmark lines and prints, per name, the median intents/s
# and its ratio to the floor: the name whose impl matches floor_re, within
# the same workers=N when the floor has one (postgres runs a floor per
# worker count), else the one floor.
ratios() { # floor_re
	awk -v floor_re="$1" '
	function median(list,   n, a, i, j, t) {
		n = split(list, a, " ")
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
	}
	/^Benchmark/ {
		name = $1; sub(/-[0-9]+$/, "", name)
		for (i = 2; i < NF; i++) if ($(i+1) == "intents/s") v = $i
		if (!(name in runs)) order[++n] = name
		runs[name] = runs[name] " " v
	}
	END {
		for (k = 1; k <= n; k++) {
			name = order[k]; med[name] = median(runs[name])
			if (name ~ floor_re) {
				w = ""; if (match(name, /workers=[0-9]+/)) w = substr(name, RSTART, RLENGTH)
				floor[w] = med[name]
			}
		}
		for (k = 1; k <= n; k++) {
			name = order[k]
			w = ""; if (match(name, /workers=[0-9]+/)) w = substr(name, RSTART, RLENGTH)
			f = (w in floor) ? floor[w] : floor[""]
			printf "%-72s %10.0f intents/s", name, med[name]
			if (f > 0 && name !~ floor_re) printf "  %5.2fx floor", med[name] / f
			printf "\n"
		}
	}'
}

run() { # package bench floor_re
	echo "== $1 ($2, -count $count, -benchtime $benchtime)"
	out=$(go test -run '^$' -bench "$2" -benchtime "$benchtime" -count "$count" "$1" 2>&1) || {
		echo "$out"
		exit 1
	}
	echo "$out" | grep '^Benchmark' | ratios "$3"
}

# vsbase prints, per benchmark row, the median intents/s of this tree's
# binary and of the baseline's, run in turns, and their ratio.
vsbase() {
	base=${BASELINE:-main}
	tmp=$(mktemp -d)
	wt="$tmp/base"
	git worktree add --detach "$wt" "$base" >/dev/null
	trap 'git worktree remove --force "$wt"; rm -rf "$tmp"' RETURN
	cp effector/sqlitestore/bench_serve_test.go "$wt/effector/sqlitestore/"
	# A baseline from before the JSONL transport moved out of effector into
	# effector/jsonl (issue 32) has it under its old names.
	if [ ! -d "$wt/effector/jsonl" ]; then
		sed -i -e '/"github.com\/beam-agents\/toolreg\/effector\/jsonl"/d' \
			-e 's/jsonl\.OpenFile(/effector.OpenJSONLFile(/g; s/jsonl\.NewSource(/effector.NewJSONLSource(/g; s/jsonl\.NewSink(/effector.NewJSONLSink(/g' \
			"$wt/effector/sqlitestore/bench_serve_test.go"
	fi
	(cd "$wt" && go test -c -o "$tmp/base.test" ./effector/sqlitestore/)
	go test -c -o "$tmp/this.test" ./effector/sqlitestore/
	echo "== vs $base ($(git -C "$wt" rev-parse --short HEAD)): BenchmarkServe at ${serve_n}x, BenchmarkProcessWorkers at ${process_n}x, -count $count, in turns"
	for _ in $(seq "$count"); do
		for which in this base; do
			(cd effector/sqlitestore && "$tmp/$which.test" -test.run '^$' -test.bench '^BenchmarkServe$' -test.benchtime "${serve_n}x") | sed -n "s/^Benchmark/$which Benchmark/p"
			(cd effector/sqlitestore && "$tmp/$which.test" -test.run '^$' -test.bench '^BenchmarkProcessWorkers$/impl=store/workers=(1|16|64)$' -test.benchtime "${process_n}x") | sed -n "s/^Benchmark/$which Benchmark/p"
		done
	done | awk '
	function median(list,   n, a, i, j, t) {
		n = split(list, a, " ")
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
	}
	{
		which = $1; name = $2; sub(/-[0-9]+$/, "", name)
		for (i = 3; i < NF; i++) if ($(i+1) == "intents/s") v = $i
		if (!(name in seen)) { order[++n] = name; seen[name] = 1 }
		runs[which, name] = runs[which, name] " " v
	}
	END {
		printf "%-56s %12s %12s %8s\n", "benchmark", "this", "base", "ratio"
		for (k = 1; k <= n; k++) {
			name = order[k]; t = median(runs["this", name]); b = median(runs["base", name])
			printf "%-56s %12.0f %12.0f %7.2fx\n", name, t, b, (b > 0 ? t / b : 0)
		}
	}'
}

uptime
for p in "${paths[@]}"; do
	case $p in
	sqlite) run ./effector/sqlitestore/ '^BenchmarkProcessWorkers$' 'impl=floor-batch100$' ;;
	redis) run ./effector/redisstore/ '^BenchmarkProcessWorkers$' 'impl=floor-pipeline100$' ;;
	redis-durable) run ./effector/redisstore/ '^BenchmarkProcessWorkersDurable$' 'impl=floor-pipeline100$' ;;
	postgres) run ./effector/pgstore/ '^BenchmarkProcessWorkers$' 'impl=floor-batch100$' ;;
	jsonl) run ./effector/jsonl/ '^BenchmarkServe$' 'impl=floor-copy-fsync-per-100$' ;;
	serve)
		benchtime="${serve_n}x" run ./effector/sqlitestore/ '^BenchmarkServe$' 'impl=floor-batch100$'
		benchtime="${serve_n}x" run ./effector/pgstore/ '^BenchmarkServe$' 'impl=floor-batch100/'
		benchtime="${serve_n}x" run ./effector/redisstore/ '^BenchmarkServe$' 'impl=floor-pipeline100$'
		benchtime="${serve_n}x" run ./effector/redisstore/ '^BenchmarkServeDurable$' 'impl=floor-pipeline100$'
		;;
	vs-main) vsbase ;;
	*) echo "unknown path $p: want sqlite, redis, redis-durable, postgres, jsonl, serve or vs-main" >&2; exit 2 ;;
	esac
done
uptime
