package jsonl_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/jsonl"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/syncbuf"
)

// batchInput writes n intents to dir/intents.jsonl and returns its path, the
// intents, and each line's end (byte offset after it).
func batchInput(t *testing.T, dir, entity string, n int) (string, []*intent.Intent, []int64) {
	t.Helper()
	var b strings.Builder
	var all []*intent.Intent
	var ends []int64
	for i := range n {
		in := effectortest.Intent(entity, 1, uint32(i))
		all = append(all, in)
		b.WriteString(effectortest.Line(t, in))
		ends = append(ends, int64(b.Len()))
	}
	path := filepath.Join(dir, "intents.jsonl")
	effectortest.WriteFile(t, path, b.String())
	return path, all, ends
}

// readCheckpoint returns the line number a checkpoint file holds, 0 if none.
func readCheckpoint(t *testing.T, path string) (int64, int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	var off int64
	var line int
	if _, err := fmt.Sscanf(string(b), "%d %d", &off, &line); err != nil {
		t.Fatalf("checkpoint %q: %v", b, err)
	}
	return off, line
}

// resultIDs parses results JSONL, failing on any line that is not a whole
// result, and returns the ids it holds.
func resultIDs(t *testing.T, b []byte) map[string]int {
	t.Helper()
	ids := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r intent.Result
		if err := r.UnmarshalJSON(sc.Bytes()); err != nil {
			t.Fatalf("results line %q is no whole result: %v", sc.Text(), err)
		}
		ids[r.IntentID]++
	}
	return ids
}

// A kill mid-batch, after results were written but before their fsync, loses
// those lines; the checkpoint on disk must never have passed an intent whose
// result line was not yet synced, so the restart delivers them again and
// every intent ends with a result.
func TestServeJSONLKillMidBatchRedeliversWhatWasNotSynced(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n = 400
	intents, all, _ := batchInput(t, dir, "kill", n)
	ck := intents + ".ack"
	results := filepath.Join(dir, "results.jsonl")
	// Intent n/2 waits for a first checkpoint, so that a batch is written
	// after one was committed, however the batches fall.
	hook := func(ctx context.Context) error {
		if info, _ := effector.IntentFrom(ctx); info.ID == all[n/2].ID {
			for {
				if _, line := readCheckpoint(t, ck); line > 0 {
					return nil
				}
				time.Sleep(time.Millisecond)
			}
		}
		return nil
	}
	e, _ := effectortest.EffectorWithHooks(t, effector.NewMemoryStore(), []func(context.Context) error{hook})
	quiet := effector.WithServeLogger(slog.New(slog.DiscardHandler))

	f := effectortest.AppendFile(t, results)
	sink := jsonl.NewSink(f)
	var mu sync.Mutex
	var durable []byte // the results file as its last fsync left it
	syncs := 0
	var checkErr error
	crashed := make(chan struct{})
	unsynced := 0 // bytes written but not synced when the "kill" came
	check := func() {
		// The checkpoint on disk covers only intents whose results are durable.
		_, line := readCheckpoint(t, ck)
		ids := resultIDs(t, durable)
		for i := range line {
			if ids[all[i].ID] == 0 && checkErr == nil {
				checkErr = fmt.Errorf("checkpoint at line %d passed line %d, whose result was not synced", line, i+1)
			}
		}
	}
	jsonl.HookSink(sink, nil, func(real func() error) error {
		mu.Lock()
		defer mu.Unlock()
		check()
		if _, line := readCheckpoint(t, ck); line > 0 {
			// The kill: this batch is written, and will never be synced.
			if unsynced == 0 {
				fi, _ := f.Stat()
				unsynced = int(fi.Size()) - len(durable)
				close(crashed)
			}
			return errors.New("killed")
		}
		syncs++
		if err := real(); err != nil {
			return err
		}
		b, err := os.ReadFile(results)
		if err != nil {
			return err
		}
		durable = b
		return nil
	})
	src, err := jsonl.OpenFile(intents)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-crashed; cancel() }()
	err = effector.Serve(ctx, src, sink, e, quiet, effector.WithWorkers(4), effector.WithDrainTimeout(0), effector.WithRetryBackoff(time.Millisecond, time.Millisecond))
	src.Close()
	var ue *effector.UnansweredError
	if !errors.As(err, &ue) {
		t.Fatalf("Serve killed mid-batch = %v, want an *UnansweredError", err)
	}
	mu.Lock()
	check()
	if checkErr != nil {
		t.Fatal(checkErr)
	}
	if unsynced <= 0 {
		t.Fatalf("the kill came with %d bytes written and not synced; want a batch written and not synced", unsynced)
	}
	// The kill loses what was not synced.
	if err := os.WriteFile(results, durable, 0o644); err != nil {
		t.Fatal(err)
	}
	_, line := readCheckpoint(t, ck)
	mu.Unlock()
	if line >= n {
		t.Fatalf("checkpoint at the end (%d) after a kill mid-run", line)
	}

	src, err = jsonl.OpenFile(intents)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := effector.Serve(context.Background(), src, jsonl.NewSink(effectortest.AppendFile(t, results)), e, quiet, effector.WithWorkers(4)); err != nil {
		t.Fatalf("Serve after the kill: %v", err)
	}
	b, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	ids := resultIDs(t, b)
	for i, in := range all {
		if ids[in.ID] == 0 {
			t.Errorf("intent %d has no result after the restart: skipped", i)
		}
	}
	if _, line := readCheckpoint(t, ck); line != n {
		t.Errorf("checkpoint at line %d after the restart, want %d", line, n)
	}
}

// failingWriter fails its fail-th write after writing half of it, as a disk
// that fills up mid-write does.
type failingWriter struct {
	w     io.Writer
	mu    sync.Mutex
	calls int
	fail  int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls++
	if w.calls == w.fail {
		n, _ := w.w.Write(p[:len(p)/2])
		return n, errors.New("disk full")
	}
	return w.w.Write(p)
}

// A result write that fails part way leaves no torn line in the results, and
// its intent is published again and answered, with the checkpoint at the end.
func TestServeJSONLResultWriteThatFailsMidLineIsRetriedWhole(t *testing.T) {
	t.Parallel()
	for _, fail := range []int{1, 3} {
		t.Run(fmt.Sprint("write=", fail), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			const n = 50
			intents, all, _ := batchInput(t, dir, "wfail", n)
			results := filepath.Join(dir, "results.jsonl")
			e, _ := effectortest.Effector(t, effector.NewMemoryStore())
			sink := jsonl.NewSink(effectortest.AppendFile(t, results))
			jsonl.HookSink(sink, func(w io.Writer) io.Writer { return &failingWriter{w: w, fail: fail} }, nil)
			src, err := jsonl.OpenFile(intents)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			if err := effector.Serve(context.Background(), src, sink, e, effector.WithWorkers(4),
				effector.WithServeLogger(slog.New(slog.DiscardHandler)), effector.WithRetryBackoff(time.Millisecond, time.Millisecond)); err != nil {
				t.Fatalf("Serve: %v", err)
			}
			b, err := os.ReadFile(results)
			if err != nil {
				t.Fatal(err)
			}
			ids := resultIDs(t, b)
			for i, in := range all {
				if ids[in.ID] == 0 {
					t.Errorf("intent %d has no result", i)
				}
			}
			if _, line := readCheckpoint(t, intents+".ack"); line != n {
				t.Errorf("checkpoint at line %d, want %d", line, n)
			}
		})
	}
}

// With concurrent workers results are published out of order; the
// checkpoint must never pass an intent still unanswered, however many after
// it are answered, nor stop short of the end once it is.
func TestServeJSONLCheckpointNeverPassesAnUnansweredIntent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n, slow = 60, 7
	intents, all, ends := batchInput(t, dir, "ooo", n)
	results := filepath.Join(dir, "results.jsonl")
	release := make(chan struct{})
	hook := func(ctx context.Context) error {
		if info, _ := effector.IntentFrom(ctx); info.ID == all[slow].ID {
			<-release
		}
		return nil
	}
	e, _ := effectortest.EffectorWithHooks(t, effector.NewMemoryStore(), []func(context.Context) error{hook})
	src, err := jsonl.OpenFile(intents)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	done := make(chan error, 1)
	go func() {
		done <- effector.Serve(context.Background(), src, jsonl.NewSink(effectortest.AppendFile(t, results)), e,
			effector.WithWorkers(8), effector.WithServeLogger(slog.New(slog.DiscardHandler)))
	}()
	// Wait until every other intent's result is published.
	for {
		b, err := os.ReadFile(results)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if bytes.Count(b, []byte("\n")) >= n-1 {
			break
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	off, line := readCheckpoint(t, intents+".ack")
	if line > slow || (line > 0 && off != ends[line-1]) {
		t.Fatalf("checkpoint at line %d (byte %d) while line %d is unanswered", line, off, slow+1)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if off, line := readCheckpoint(t, intents+".ack"); line != n || off != ends[n-1] {
		t.Fatalf("checkpoint at line %d (byte %d), want the end %d (byte %d)", line, off, n, ends[n-1])
	}
}

// A checkpoint save that fails fails the whole batch's acknowledgement:
// Serve retries it, and answers none of the batch before the checkpoint is
// on disk; once saves work again, it ends with the checkpoint at the end.
func TestServeJSONLFailedCheckpointSaveIsRetriedUntilSaved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n = 30
	intents, _, ends := batchInput(t, dir, "ckfail", n)
	ck := intents + ".ack"
	// A directory where the save writes its temporary file fails the save.
	blocker := ck + ".tmp"
	if err := os.Mkdir(blocker, 0o700); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "results.jsonl")
	e, _ := effectortest.Effector(t, effector.NewMemoryStore())
	src, err := jsonl.OpenFile(intents)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var logs syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- effector.Serve(context.Background(), src, jsonl.NewSink(effectortest.AppendFile(t, results)), e, effector.WithWorkers(4),
			effector.WithServeLogger(slog.New(slog.NewTextHandler(&logs, nil))), effector.WithRetryBackoff(time.Millisecond, time.Millisecond))
	}()
	for {
		b, err := os.ReadFile(results)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if bytes.Count(b, []byte("\n")) >= n && strings.Contains(logs.String(), "acknowledging intent failed; retrying") {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := os.Stat(ck); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("checkpoint file while saves fail: %v, want none", err)
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned %v while no checkpoint could be saved", err)
	default:
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if off, line := readCheckpoint(t, ck); line != n || off != ends[n-1] {
		t.Fatalf("checkpoint at line %d (byte %d), want the end %d (byte %d)", line, off, n, ends[n-1])
	}
}

// wrappingSource wraps each delivery's Ack, as a middleware source might,
// and, as Delivery.Acker's doc asks, its Acker too (wrapBatch), or clears it.
type wrappingSource struct {
	effector.Source
	wrapBatch bool
	mu        sync.Mutex
	acked     map[string]int // acknowledgements seen, by position
	batches   int            // AckBatch calls seen
	inner     effector.BatchAcker
}

func (w *wrappingSource) Receive(ctx context.Context) (effector.Delivery, error) {
	d, err := w.Source.Receive(ctx)
	if err != nil || d.Ack == nil {
		return d, err
	}
	inner, pos := d.Ack, d.Pos
	d.Ack = func(ctx context.Context) error {
		if err := inner(ctx); err != nil {
			return err
		}
		w.mu.Lock()
		w.acked[pos]++
		w.mu.Unlock()
		return nil
	}
	if w.wrapBatch && d.Acker != nil {
		if w.inner == nil { // written once, before any AckBatch reads it
			w.inner = d.Acker
		}
		d.Acker = w
	} else {
		d.Acker = nil
	}
	return d, nil
}

// AckBatch acknowledges ds through the inner source's AckBatch, handing it
// the deliveries with its own Acker, and counts them.
func (w *wrappingSource) AckBatch(ctx context.Context, ds []effector.Delivery) error {
	inner := slices.Clone(ds)
	for i := range inner {
		inner[i].Acker = w.inner
	}
	if err := w.inner.AckBatch(ctx, inner); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.batches++
	for _, d := range ds {
		w.acked[d.Pos]++
	}
	return nil
}

// A source that wraps a JSONL file source's deliveries and their Ack sees
// every acknowledgement, once, whether it clears Acker (each delivery is
// then acknowledged through its Ack) or wraps it (in batches).
func TestServeJSONLWrapperOfAckSeesEveryAcknowledgement(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		wrapBatch bool
	}{
		{"when it clears Acker, through each Ack", false},
		{"when it wraps Acker, through its AckBatch", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			const n = 50
			intents, _, ends := batchInput(t, dir, "wrap", n)
			e, _ := effectortest.Effector(t, effector.NewMemoryStore())
			src, err := jsonl.OpenFile(intents)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			w := &wrappingSource{Source: src, wrapBatch: tc.wrapBatch, acked: map[string]int{}}
			if err := effector.Serve(context.Background(), w, jsonl.NewSink(effectortest.AppendFile(t, filepath.Join(dir, "results.jsonl"))), e,
				effector.WithWorkers(4), effector.WithServeLogger(slog.New(slog.DiscardHandler))); err != nil {
				t.Fatalf("Serve: %v", err)
			}
			for i := range n {
				if pos := fmt.Sprintf("%s:%d", intents, i+1); w.acked[pos] != 1 {
					t.Errorf("%s acknowledged %d times through the wrapper, want once", pos, w.acked[pos])
				}
			}
			if tc.wrapBatch && w.batches == 0 {
				t.Errorf("the wrapper's AckBatch was never called")
			}
			if off, line := readCheckpoint(t, intents+".ack"); line != n || off != ends[n-1] {
				t.Fatalf("checkpoint at line %d (byte %d), want the end %d (byte %d)", line, off, n, ends[n-1])
			}
		})
	}
}

// A batch waits for more results only a little while: with another intent
// still being processed (its tool blocked), the results handed off are
// synced and checkpointed without it.
func TestServeJSONLBatchDoesNotWaitForAnIntentStillRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n, slow = 5, 3
	intents, all, ends := batchInput(t, dir, "busy", n)
	release := make(chan struct{})
	hook := func(ctx context.Context) error {
		if info, _ := effector.IntentFrom(ctx); info.ID == all[slow].ID {
			<-release
		}
		return nil
	}
	e, _ := effectortest.EffectorWithHooks(t, effector.NewMemoryStore(), []func(context.Context) error{hook})
	src, err := jsonl.OpenFile(intents)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	done := make(chan error, 1)
	go func() {
		done <- effector.Serve(context.Background(), src, jsonl.NewSink(effectortest.AppendFile(t, filepath.Join(dir, "results.jsonl"))), e,
			effector.WithWorkers(1), effector.WithServeLogger(slog.New(slog.DiscardHandler)))
	}()
	// The test's own timeout bounds this wait.
	for {
		if off, line := readCheckpoint(t, intents+".ack"); line == slow {
			if off != ends[slow-1] {
				t.Fatalf("checkpoint at line %d, byte %d; want byte %d", line, off, ends[slow-1])
			}
			break
		} else if line > slow {
			t.Fatalf("checkpoint at line %d past the running line %d", line, slow+1)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if off, line := readCheckpoint(t, intents+".ack"); line != n || off != ends[n-1] {
		t.Fatalf("checkpoint at line %d (byte %d), want the end %d (byte %d)", line, off, n, ends[n-1])
	}
}

// TestSourceReceiveBatchHandsOverTheLinesRead: ReceiveBatch waits for
// the first line, then hands over the lines already read, at most max, in
// file order, and io.EOF with the last of them; an undecodable line comes as
// a delivery with its error, in its place.
func TestSourceReceiveBatchHandsOverTheLinesRead(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	var want []string
	for i := range 7 {
		in := effectortest.Intent("rb", int64(i+1), 0)
		want = append(want, in.ID)
		line, err := in.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
		if i == 2 {
			b.WriteString("{torn\n")
			want = append(want, "")
		}
	}
	src := jsonl.NewSource(strings.NewReader(b.String()), "rb.jsonl")
	defer src.Close()
	ctx := context.Background()
	var got []string
	var ds []effector.Delivery
	var err error
	for err == nil {
		ds, err = src.ReceiveBatch(ctx, 3, ds[:0])
		if len(ds) > 3 {
			t.Fatalf("ReceiveBatch(max 3) handed over %d deliveries", len(ds))
		}
		for _, d := range ds {
			switch {
			case d.Err != nil:
				got = append(got, "")
			case d.Intent != nil:
				got = append(got, d.Intent.ID)
			}
		}
	}
	if !errors.Is(err, io.EOF) {
		t.Fatalf("ReceiveBatch ended with %v, want io.EOF", err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("ReceiveBatch handed over %q, want every line in file order %q", got, want)
	}
}

// AckBatch on a file source marks a batch's lines and saves the checkpoint
// once, never past a line not acknowledged; it refuses a batch with a
// delivery it did not hand out, marking none of it; and acknowledging a
// line again through its Ack is harmless.
func TestAckBatchSavesTheCheckpointOncePerBatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n = 6
	intents, all, ends := batchInput(t, dir, "ackbatch", n)
	src, err := jsonl.OpenFile(intents)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx := context.Background()
	var ds []effector.Delivery
	for len(ds) < n {
		if ds, err = src.ReceiveBatch(ctx, n-len(ds), ds); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range ds {
		if d.Acker != src {
			t.Fatalf("delivery %s has Acker %v, want its source", d.Pos, d.Acker)
		}
	}
	saves := func() int64 { return jsonl.Fsyncs(jsonl.NewSink(io.Discard), src) / 2 }

	foreign := ds[0]
	foreign.Intent = all[0] // the same intent, not the one this delivery decoded
	if err := src.AckBatch(ctx, []effector.Delivery{foreign, ds[1]}); err == nil {
		t.Fatal("AckBatch took a delivery it did not hand out")
	}
	if err := src.AckBatch(ctx, ds[1:4]); err != nil {
		t.Fatalf("AckBatch of lines 2-4: %v", err)
	}
	if _, line := readCheckpoint(t, intents+".ack"); line != 0 {
		t.Fatalf("checkpoint at line %d with line 1 unacknowledged, want 0", line)
	}
	before := saves()
	if err := src.AckBatch(ctx, []effector.Delivery{ds[0], ds[4]}); err != nil {
		t.Fatalf("AckBatch of lines 1 and 5: %v", err)
	}
	if got := saves() - before; got != 1 {
		t.Errorf("AckBatch of 2 lines saved the checkpoint %d times, want 1", got)
	}
	if off, line := readCheckpoint(t, intents+".ack"); line != 5 || off != ends[4] {
		t.Fatalf("checkpoint at line %d (byte %d), want line 5 (byte %d)", line, off, ends[4])
	}
	for _, d := range ds[:5] {
		if err := d.Ack(ctx); err != nil {
			t.Fatalf("Ack of %s after its batch: %v", d.Pos, err)
		}
	}
	if err := ds[5].Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if off, line := readCheckpoint(t, intents+".ack"); line != n || off != ends[n-1] {
		t.Fatalf("checkpoint at line %d (byte %d), want the end %d (byte %d)", line, off, n, ends[n-1])
	}
}
