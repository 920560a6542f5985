package jsonl_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector/jsonl"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// TestALastLineStillBeingWrittenIsWaitedForAsLongAsItGrows: a producer
// writing one line slowly, a few bytes at a time, for three times the torn
// line wait in all, is alive: the source waits for its newline and reads
// the line whole. Only a fragment that stops growing for the whole wait is
// a torn line.
func TestALastLineStillBeingWrittenIsWaitedForAsLongAsItGrows(t *testing.T) {
	t.Parallel()
	const wait = 300 * time.Millisecond
	dir := t.TempDir()
	path := filepath.Join(dir, "intents.jsonl")
	in := effectortest.Intent("slow", 1, 0)
	line := effectortest.Line(t, in)
	// Pieces far apart enough that the whole line takes 3x the wait, close
	// enough that no gap comes near it.
	pieces := 30
	step := max(1, len(line)/pieces)
	effectortest.WriteFile(t, path, line[:step]) // the source finds the line begun
	src, err := jsonl.OpenFile(path, jsonl.WithTornLineWait(wait))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()

	f := effectortest.AppendFile(t, path)
	defer f.Close()
	written := make(chan error, 1)
	go func() {
		for i := step; i < len(line); i += step {
			if _, err := f.WriteString(line[i:min(i+step, len(line))]); err != nil {
				written <- err
				return
			}
			time.Sleep(3 * wait / time.Duration(pieces))
		}
		written <- nil
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := src.Receive(ctx)
	if err != nil || d.Intent == nil || d.Intent.ID != in.ID {
		t.Fatalf("Receive while the line is written = %+v, %v; want intent %s, read whole", d, err, in.ID)
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
}
