package redisstore

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// rounds keeps the floor's keys fresh across the rounds and -count
// repetitions of a benchmark, which share one server.
var rounds atomic.Int64

// BenchmarkClaimComplete measures one intent through the store (Claim's SET NX
// PX, then Complete's compare-and-set script) against the floor the issue
// names, from one client to one redis-server in the same run: a SET NX plus a
// SET per intent. Both are sequential, so each is bound by round trips.
// Compare with: benchstat -col /impl.
func BenchmarkClaimComplete(b *testing.B) {
	ctx := context.Background()
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	result := []byte(`{"status":1,"payload":{"ok":true}}`)

	b.Run("impl=floor", func(b *testing.B) {
		prefix := strconv.FormatInt(rounds.Add(1), 10)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			key := prefix + "floor:intent-" + strconv.Itoa(i)
			if err := rdb.SetNX(ctx, key, "token", time.Minute).Err(); err != nil {
				b.Fatal(err)
			}
			if err := rdb.Set(ctx, key, result, time.Hour).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("impl=store", func(b *testing.B) {
		// Fresh ids come from effectortest, round after round.
		effectortest.BenchmarkClaimComplete(b, New(rdb), result)
	})
	// One intent through effector.Process with this store.
	b.Run("impl=process", func(b *testing.B) {
		effectortest.BenchmarkProcess(b, New(rdb))
	})
}

// BenchmarkProcessWorkers runs intents through effector.Process from 1, 4,
// 16 and 64 concurrent workers on one store, and reports intents/s beside two
// floors written here, against the same redis-server: floor=rt-per-intent
// sends each intent's claim (SET NX) and completion (SET) in one round trip
// of its own; floor=pipeline100 sends 100 intents' claims in one pipeline,
// then their completions in another. The floors write keys as the store's
// (the prefix, "{i:", an id as Process's intents have, "}"), so both fill
// the server with the same kind of keys. impl=store-batch100 is the store's
// native batches doing what pipeline100 does: ClaimBatch of 100 intents,
// then CompleteBatch of those 100, a pipeline each. batch=1 is the store without group
// commit (each script call its own round trip, as before issue 20). The
// server persists nothing: BenchmarkProcessWorkersDurable is the same on a
// server with appendfsync always, as the store's users run it.
func BenchmarkProcessWorkers(b *testing.B) {
	benchProcessWorkers(b, redistest.Start(b))
}

// BenchmarkProcessWorkersDurable is BenchmarkProcessWorkers on a server that
// writes every reply's effect to its append-only file and fsyncs it before
// replying (appendonly yes, appendfsync always), floors and store alike.
func BenchmarkProcessWorkersDurable(b *testing.B) {
	benchProcessWorkers(b, redistest.Start(b, redistest.WithDurability()))
}

func benchProcessWorkers(b *testing.B, srv *redistest.Server) {
	ctx := context.Background()
	rdb := srv.Client(b)
	result := []byte(`{"status":1,"payload":{"ok":true}}`)
	perSec := func(b *testing.B, start time.Time) {
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "intents/s")
	}
	b.Run("impl=floor-rt-per-intent", func(b *testing.B) {
		keys := floorKeys(b, strconv.FormatInt(rounds.Add(1), 10)+"floor1:")
		b.ResetTimer()
		start := time.Now()
		for _, key := range keys {
			pipe := rdb.Pipeline()
			pipe.SetNX(ctx, key, "token", time.Minute)
			pipe.Set(ctx, key, result, time.Hour)
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
		perSec(b, start)
	})
	b.Run("impl=floor-pipeline100", func(b *testing.B) {
		reportServerCPU(b, rdb)
		floorPipeline100(b, rdb)
	})
	// The store's native batches doing what the floor pipeline100 does
	// (issue 32): ClaimBatch of 100 intents, then CompleteBatch of those 100.
	b.Run("impl=store-batch100", func(b *testing.B) {
		reportServerCPU(b, rdb)
		s := New(rdb, WithKeyPrefix(strconv.FormatInt(rounds.Add(1), 10)+":"))
		effectortest.BenchmarkBatch100(b, s, 1, result)
		b.ReportMetric(float64(s.batchItems.Load())/float64(max(1, s.batchTrips.Load())), "items/rt")
	})
	for _, batch := range []int{1, DefaultBatchSize} {
		for _, workers := range []int{1, 4, 16, 64} {
			b.Run("impl=store/batch="+strconv.Itoa(batch)+"/workers="+strconv.Itoa(workers), func(b *testing.B) {
				reportServerCPU(b, rdb)
				s := New(rdb, WithKeyPrefix(strconv.FormatInt(rounds.Add(1), 10)+":"), WithBatch(batch))
				effectortest.BenchmarkProcessWorkers(b, s, workers)
				b.ReportMetric(float64(s.calls())/float64(max(1, s.batches())), "calls/rt")
			})
		}
	}
}

// BenchmarkProcessWorkersLanes is BenchmarkProcessWorkers's floor=pipeline100
// and store at 16 and 64 workers with 1, 2 and 4 lanes (WithLanes), over a
// proxy that holds each request for $REDISSTORE_BENCH_DELAY (default 200µs),
// as a network between client and server would, and without it
// (delay=0): where one pipeline at a time waits on the network, several
// lanes keep the server busy; on loopback they cost CPU.
func BenchmarkProcessWorkersLanes(b *testing.B) {
	delay := 200 * time.Microsecond
	if d, err := time.ParseDuration(os.Getenv("REDISSTORE_BENCH_DELAY")); err == nil {
		delay = d
	}
	srv := redistest.Start(b)
	for _, d := range []time.Duration{0, delay} {
		rdb := srv.Client(b)
		if d > 0 {
			p := srv.Proxy(b)
			p.Delay(d)
			rdb = redis.NewClient(&redis.Options{Addr: p.Addr})
			b.Cleanup(func() { rdb.Close() })
		}
		b.Run("delay="+d.String(), func(b *testing.B) {
			b.Run("impl=floor-pipeline100", func(b *testing.B) { floorPipeline100(b, rdb) })
			for _, workers := range []int{16, 64} {
				for _, lanes := range []int{1, 2, 4} {
					b.Run("impl=store/lanes="+strconv.Itoa(lanes)+"/workers="+strconv.Itoa(workers), func(b *testing.B) {
						s := New(rdb, WithKeyPrefix(strconv.FormatInt(rounds.Add(1), 10)+":"), WithLanes(lanes))
						effectortest.BenchmarkProcessWorkers(b, s, workers)
						b.ReportMetric(float64(s.calls())/float64(max(1, s.batches())), "calls/rt")
					})
				}
			}
		})
	}
}

// floorKeys are b.N fresh keys named as the store names intents' records.
func floorKeys(b *testing.B, prefix string) []string {
	keys := effectortest.FloorIDs(b.N)
	for i, id := range keys {
		keys[i] = prefix + "{i:" + id + "}"
	}
	return keys
}

// floorPipeline100 sends 100 intents' claims (SET NX) in one pipeline,
// then their completions (SET) in another, and reports intents/s.
func floorPipeline100(b *testing.B, rdb *redis.Client) {
	ctx := context.Background()
	result := []byte(`{"status":1,"payload":{"ok":true}}`)
	keys := floorKeys(b, strconv.FormatInt(rounds.Add(1), 10)+"floor100:")
	b.ResetTimer()
	start := time.Now()
	for lo := 0; lo < b.N; lo += 100 {
		hi := min(lo+100, b.N)
		pipe := rdb.Pipeline()
		for _, key := range keys[lo:hi] {
			pipe.SetNX(ctx, key, "token", time.Minute)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		for _, key := range keys[lo:hi] {
			pipe.Set(ctx, key, result, time.Hour)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "intents/s")
}

// reportServerCPU reports the processor time the server spent per intent
// during b (srv-cpu-µs/intent, from INFO cpu): a figure that moves less
// with the machine's load than intents/s.
func reportServerCPU(b *testing.B, rdb *redis.Client) {
	start := serverCPU(b, rdb)
	b.Cleanup(func() {
		b.ReportMetric((serverCPU(b, rdb)-start).Seconds()*1e6/float64(b.N), "srv-cpu-µs/intent")
	})
}

// reportServerCommands reports the time the server spent per intent
// during b in each of cmds (srv-NAME-µs/intent, from INFO commandstats,
// which it resets first): where the server's time goes. A script's
// figure includes the commands it calls, which are counted again under
// their own names.
func reportServerCommands(b *testing.B, rdb *redis.Client, cmds ...string) {
	if err := rdb.ConfigResetStat(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		info, err := rdb.Info(context.Background(), "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		usec := map[string]int64{}
		for _, line := range strings.Split(info, "\r\n") {
			name, stats, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
			if !ok || len(name) == len(line) {
				continue
			}
			for _, f := range strings.Split(stats, ",") {
				if v, ok := strings.CutPrefix(f, "usec="); ok {
					n, err := strconv.ParseInt(v, 10, 64)
					if err != nil {
						b.Fatalf("INFO commandstats: %s: %v", line, err)
					}
					usec[name] = n
				}
			}
		}
		for _, c := range cmds {
			b.ReportMetric(float64(usec[c])/float64(b.N), "srv-"+c+"-µs/intent")
		}
	})
}

// serverCPU is the processor time the server has used, user and system.
func serverCPU(b *testing.B, rdb *redis.Client) time.Duration {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var sec float64
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("INFO cpu: %s: %v", line, err)
			}
			sec += f
		}
	}
	return time.Duration(sec * float64(time.Second))
}
