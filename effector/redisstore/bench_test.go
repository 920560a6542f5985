package redisstore

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

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
