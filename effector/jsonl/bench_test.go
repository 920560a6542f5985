package jsonl_test

import (
	"bufio"
	"context"
	"fmt"
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

// BenchmarkServe serves b.N intents from a JSONL file to a JSONL file
// (durable: each result synced, the checkpoint saved, before an intent counts
// as answered) with 1 and 16 workers, on the in-memory store so that the
// transport is what is measured, and reports intents/s beside the floor the
// issue names, in the same run on the same disk: floor=copy-fsync-per-100
// copies the same lines to a file, fsyncing it once per 100 lines and saving
// a checkpoint (write, fsync, rename, directory fsync) after each fsync.
// Each reports fsyncs/100intents too: on this machine an fsync costs CPU
// (about 0.3 ms of system time), so the count matters under load.
func BenchmarkServe(b *testing.B) {
	input := func(b *testing.B, dir string) string {
		path := filepath.Join(dir, "intents.jsonl")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		seq := time.Now().UnixNano()
		for i := range b.N {
			in := effectortest.Intent("serve-bench", seq, uint32(i))
			line, err := in.MarshalJSON()
			if err != nil {
				b.Fatal(err)
			}
			w.Write(line)
			w.WriteByte('\n')
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		return path
	}
	perSec := func(b *testing.B, start time.Time) {
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "intents/s")
	}

	b.Run("impl=floor-copy-fsync-per-100", func(b *testing.B) {
		b.ReportAllocs()
		dir := b.TempDir()
		in := input(b, dir)
		b.ResetTimer()
		start := time.Now()
		src, err := os.Open(in)
		if err != nil {
			b.Fatal(err)
		}
		defer src.Close()
		out, err := os.OpenFile(filepath.Join(dir, "results.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer out.Close()
		r := bufio.NewReader(src)
		var offset int64
		n := 0
		fsyncs := 0
		flush := func() {
			if err := out.Sync(); err != nil {
				b.Fatal(err)
			}
			saveCheckpoint(b, filepath.Join(dir, "intents.jsonl.ack"), offset, n)
			fsyncs += 3 // the results, the checkpoint file, its directory
		}
		for {
			line, err := r.ReadBytes('\n')
			if len(line) == 0 {
				break
			}
			if _, werr := out.Write(line); werr != nil {
				b.Fatal(werr)
			}
			offset += int64(len(line))
			n++
			if n%100 == 0 {
				flush()
			}
			if err != nil {
				break
			}
		}
		flush()
		perSec(b, start)
		b.ReportMetric(100*float64(fsyncs)/float64(b.N), "fsyncs/100intents")
	})
	for _, workers := range []int{1, 16} {
		b.Run("impl=serve/workers="+strconv.Itoa(workers), func(b *testing.B) {
			b.ReportAllocs()
			dir := b.TempDir()
			in := input(b, dir)
			e, calls := effectortest.Effector(b, effector.NewMemoryStore())
			src, err := jsonl.OpenFile(in)
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			out, err := os.OpenFile(filepath.Join(dir, "results.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			defer out.Close()
			b.ResetTimer()
			start := time.Now()
			sink := jsonl.NewSink(out)
			if err := effector.Serve(context.Background(), src, sink, e, effector.WithWorkers(workers), effector.WithServeLogger(slog.New(slog.DiscardHandler))); err != nil {
				b.Fatal(err)
			}
			perSec(b, start)
			b.StopTimer()
			b.ReportMetric(100*float64(jsonl.Fsyncs(sink, src))/float64(b.N), "fsyncs/100intents")
			if calls.Total() != b.N {
				b.Fatalf("%d calls for %d intents", calls.Total(), b.N)
			}
		})
	}
}

// saveCheckpoint writes a checkpoint as OpenFile's source does.
func saveCheckpoint(b *testing.B, path string, offset int64, line int) {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%d %d\n", offset, line), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(tmp)
	if err == nil {
		err = f.Sync()
		f.Close()
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		var d *os.File
		if d, err = os.Open(filepath.Dir(path)); err == nil {
			err = d.Sync()
			d.Close()
		}
	}
	if err != nil {
		b.Fatal(err)
	}
}
