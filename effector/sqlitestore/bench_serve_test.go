package sqlitestore

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/jsonl"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// BenchmarkServe serves b.N intents through effector.Serve into this store
// and reports intents/s beside the floor the issue names, in the same run on
// the same kind of file with the same pragmas: impl=floor-batch100 writes
// 100 intents' claims in one transaction, then their completions in
// another (as BenchmarkProcessWorkers's floor does). The Serve rows:
// impl=serve-memjsonl reads the intents from an in-memory JSONL stream and
// writes the results to io.Discard, so the store is the only durable step;
// impl=serve-jsonlfile reads them from a JSONL file with a checkpoint and
// writes them to a JSONL file, both fsynced, as a deployment does. Each runs
// at 1 and 16 workers (the tool concurrency) and reports the store's ops per
// commit. Uses only the public API of package effector, so it builds
// against an earlier effector for comparison.
func BenchmarkServe(b *testing.B) {
	ctx := context.Background()
	result := []byte(`{"status":1,"payload":{"ok":true}}`)
	lines := func(b *testing.B) []byte {
		var buf bytes.Buffer
		seq := time.Now().UnixNano()
		for i := range b.N {
			line, err := effectortest.Intent("serve-bench", seq, uint32(i)).MarshalJSON()
			if err != nil {
				b.Fatal(err)
			}
			buf.Write(line)
			buf.WriteByte('\n')
		}
		return buf.Bytes()
	}
	b.Run("impl=floor-batch100", func(b *testing.B) {
		db, err := sql.Open("sqlite", dsn(filepath.Join(b.TempDir(), "floor.db"), 10*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		if _, err := db.Exec(`CREATE TABLE floor (id TEXT PRIMARY KEY NOT NULL, v BLOB) WITHOUT ROWID`); err != nil {
			b.Fatal(err)
		}
		tx := func(batch []string, query string, v any) {
			t, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			for _, id := range batch {
				if _, err := t.ExecContext(ctx, query, id, v); err != nil {
					b.Fatal(err)
				}
			}
			if err := t.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		ids := effectortest.FloorIDs(b.N)
		b.ResetTimer()
		start := time.Now()
		for lo := 0; lo < len(ids); lo += 100 {
			batch := ids[lo:min(lo+100, len(ids))]
			tx(batch, `INSERT INTO floor (id, v) VALUES (?1, ?2)`, "token")
			tx(batch, `UPDATE floor SET v = ?2 WHERE id = ?1`, result)
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "intents/s")
	})
	serve := func(b *testing.B, workers int, file bool) {
		dir := b.TempDir()
		s, err := Open(ctx, filepath.Join(dir, "store.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		e, calls := effectortest.Effector(b, s)
		data := lines(b)
		var src effector.Source
		var sink effector.Sink
		if file {
			in := filepath.Join(dir, "intents.jsonl")
			if err := os.WriteFile(in, data, 0o644); err != nil {
				b.Fatal(err)
			}
			js, err := jsonl.OpenFile(in)
			if err != nil {
				b.Fatal(err)
			}
			defer js.Close()
			out, err := os.OpenFile(filepath.Join(dir, "results.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			defer out.Close()
			src, sink = js, jsonl.NewSink(out)
		} else {
			js := jsonl.NewSource(bufio.NewReader(bytes.NewReader(data)), "bench")
			defer js.Close()
			src, sink = js, jsonl.NewSink(io.Discard)
		}
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		if err := effector.Serve(ctx, src, sink, e, effector.WithWorkers(workers), effector.WithServeLogger(slog.New(slog.DiscardHandler))); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "intents/s")
		b.StopTimer()
		b.ReportMetric(float64(s.group.Ops.Load())/float64(max(1, s.group.Batches.Load())), "ops/commit")
		if calls.Total() != b.N {
			b.Fatalf("the tool ran %d times for %d intents", calls.Total(), b.N)
		}
	}
	for _, workers := range []int{1, 16} {
		b.Run("impl=serve-memjsonl/workers="+strconv.Itoa(workers), func(b *testing.B) { serve(b, workers, false) })
		b.Run("impl=serve-jsonlfile/workers="+strconv.Itoa(workers), func(b *testing.B) { serve(b, workers, true) })
	}
}
