package redisstore

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/redisstream"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// BenchmarkServe serves b.N intents through effector.Serve into this store
// and reports intents/s beside the floor the issue names, against the same
// redis-server (no persistence) in the same run: impl=floor-pipeline100
// sends 100 intents' claims in one pipeline, then their completions in
// another (BenchmarkProcessWorkers's floor). The Serve rows:
// impl=serve-redisstream reads the intents from a Redis stream as one
// consumer of a group (reads of effector.DefaultBatchSize entries), appends
// the results to another stream and acknowledges each entry (XACK);
// impl=serve-jsonlfile reads them from a JSONL file with its checkpoint and
// writes the results to a JSONL file, both fsynced. Each runs at 1 and 16
// workers (the tool concurrency), reports the store's items per batch round
// trip and the server's processor time per intent (over Redis Streams, also
// its time in each command: the scripts, XREADGROUP, XADD, XACK), and fails
// unless every intent ran exactly once. BenchmarkServeDurable is the same
// on a server with appendfsync always.
func BenchmarkServe(b *testing.B) {
	benchServe(b, redistest.Start(b))
}

// BenchmarkServeDurable is BenchmarkServe on a server that fsyncs its
// append-only file before it replies (appendonly yes, appendfsync always).
func BenchmarkServeDurable(b *testing.B) {
	benchServe(b, redistest.Start(b, redistest.WithDurability()))
}

func benchServe(b *testing.B, srv *redistest.Server) {
	ctx := context.Background()
	rdb := srv.Client(b)
	serve := func(b *testing.B, workers int, stream bool) {
		reportServerCPU(b, rdb)
		round := strconv.FormatInt(rounds.Add(1), 10)
		s := New(rdb, WithKeyPrefix(round+":"))
		e, calls := effectortest.Effector(b, s)
		ins := effectortest.ServeIntents(b)
		var src effector.Source
		var sink effector.Sink
		if stream {
			intents := "intents-" + round
			addIntents(b, rdb, intents, ins)
			reportServerCommands(b, rdb, "evalsha", "xreadgroup", "xadd", "xack")
			rs, err := redisstream.NewSource(ctx, rdb, intents, "effector", "bench", redisstream.WithBatch(effector.DefaultBatchSize))
			if err != nil {
				b.Fatal(err)
			}
			src, sink = rs, redisstream.NewSink(rdb, "results-"+round)
		} else {
			src, sink = effectortest.JSONLFile(b, ins)
		}
		effectortest.BenchmarkServe(b, src, sink, e, calls, ins, workers)
		b.ReportMetric(float64(s.batchItems.Load())/float64(max(1, s.batchTrips.Load())), "items/rt")
	}
	b.Run("impl=floor-pipeline100", func(b *testing.B) {
		reportServerCPU(b, rdb)
		floorPipeline100(b, rdb)
	})
	for _, workers := range []int{1, 16} {
		w := "/workers=" + strconv.Itoa(workers)
		b.Run("impl=serve-redisstream"+w, func(b *testing.B) { serve(b, workers, true) })
		b.Run("impl=serve-jsonlfile"+w, func(b *testing.B) { serve(b, workers, false) })
	}
}

// addIntents appends ins to stream as redisstream.Add does, 1000 to a
// pipeline.
func addIntents(b *testing.B, rdb *redis.Client, stream string, ins []*intent.Intent) {
	ctx := context.Background()
	for lo := 0; lo < len(ins); lo += 1000 {
		pipe := rdb.Pipeline()
		for _, in := range ins[lo:min(lo+1000, len(ins))] {
			raw, err := in.MarshalJSON()
			if err != nil {
				b.Fatal(err)
			}
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []any{redisstream.IntentField, string(raw)}})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
