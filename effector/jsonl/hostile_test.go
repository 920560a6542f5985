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

// hostileQuiet is the logger option of the hostile tests.
var hostileQuiet = effector.WithServeLogger(slog.New(slog.DiscardHandler))

// hostileDisk models the results file's disk under a Sink: what the
// sink wrote since the last fsync is pending, a successful fsync makes it
// durable, and a failed one loses it, as Linux does (the kernel marks the
// pages whose writeback failed clean, reports the error once, and a later
// fsync succeeds without them). crash rewrites the file as the disk holds it.
type hostileDisk struct {
	mu      sync.Mutex
	path    string
	durable []byte
	pending []byte
	syncs   int
	// onSync, if set, runs before each fsync (numbered from 1) and says
	// whether it fails.
	onSync func(n int, pending []byte) (fail bool)
}

func (d *hostileDisk) hook(t *testing.T, sink *jsonl.Sink) {
	jsonl.HookSink(sink, func(w io.Writer) io.Writer { return diskWriter{d, w} }, func(real func() error) error {
		d.mu.Lock()
		d.syncs++
		n, pending := d.syncs, d.pending
		d.mu.Unlock()
		if d.onSync != nil && d.onSync(n, pending) {
			d.mu.Lock()
			d.pending = d.pending[len(pending):] // lost
			d.mu.Unlock()
			return errors.New("fsync: input/output error")
		}
		if err := real(); err != nil {
			return err
		}
		d.mu.Lock()
		d.durable = append(d.durable, pending...)
		d.pending = d.pending[len(pending):]
		d.mu.Unlock()
		return nil
	})
}

type diskWriter struct {
	d *hostileDisk
	w io.Writer
}

func (w diskWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.d.mu.Lock()
	w.d.pending = append(w.d.pending, p[:n]...)
	w.d.mu.Unlock()
	return n, err
}

// crash leaves the results file as the disk holds it after a power loss.
func (d *hostileDisk) crash(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := os.WriteFile(d.path, d.durable, 0o644); err != nil {
		t.Fatal(err)
	}
	d.pending = nil
}

// wholeResults reads results JSONL leniently, as a consumer that skips a
// line it cannot parse does, and returns the ids of the whole result lines
// and the number of lines it skipped.
func wholeResults(t *testing.T, path string) (ids map[string]int, bad int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	ids = map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r intent.Result
		if err := r.UnmarshalJSON(sc.Bytes()); err != nil {
			bad++
			continue
		}
		ids[r.IntentID]++
	}
	return ids, bad
}

// checkCovered fails if the checkpoint on disk has passed an intent that
// has no whole result line in the results file.
func checkCovered(t *testing.T, ck, results string, all []*intent.Intent) {
	t.Helper()
	_, line := readCheckpoint(t, ck)
	ids, _ := wholeResults(t, results)
	for i := range min(line, len(all)) {
		if ids[all[i].ID] == 0 {
			t.Errorf("the checkpoint on disk is at line %d, past line %d, whose result is not on disk: lost", line, i+1)
		}
	}
}

// An fsync that fails loses what it was to sync; a later fsync that
// succeeds does not bring it back. So a line whose fsync failed is not
// durable, whoever's fsync comes next: the batch must not acknowledge the
// other intents whose result lines that failed fsync covered. After the
// power loss every acknowledged intent must have its result on disk, and a
// restart must answer every intent, none run twice.
func TestServeJSONLAFailedFsyncIsNotVouchedForByTheNextOne(t *testing.T) {
	t.Parallel()
	t.Run("one fsync fails", func(t *testing.T) { t.Parallel(); failedFsyncs(t, 2, 2) })
	t.Run("three fsyncs fail in a row", func(t *testing.T) { t.Parallel(); failedFsyncs(t, 2, 4) })
}

// failedFsyncs serves with the fsyncs from..to (numbered from 1) failing.
func failedFsyncs(t *testing.T, from, to int) {
	dir := t.TempDir()
	const n = 12
	intents, all, _ := batchInput(t, dir, "fsyncgate", n)
	ck := intents + ".ack"
	results := filepath.Join(dir, "results.jsonl")
	// Intent 2 runs once the first fsync (intent 1's line alone) has begun,
	// and that fsync waits until the tool runs for intent 5 and the results
	// of intents 2 to 4 are staged behind it (the completer stages them
	// while the finisher waits for that fsync): the next batch holds
	// several result lines, and its fsync fails.
	first, fifth := make(chan struct{}), make(chan struct{})
	hook := func(ctx context.Context) error {
		switch info, _ := effector.IntentFrom(ctx); info.ID {
		case all[1].ID:
			<-first
		case all[4].ID:
			close(fifth)
		}
		return nil
	}
	store := effector.NewMemoryStore()
	e, calls := effectortest.EffectorWithHooks(t, store, []func(context.Context) error{hook})
	disk := &hostileDisk{path: results}
	failedLines := 0
	var sink *jsonl.Sink
	disk.onSync = func(n int, pending []byte) bool {
		switch {
		case n == 1:
			close(first)
			<-fifth
			for deadline := time.Now().Add(10 * time.Second); jsonl.Staged(sink) < 4 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		case n == from:
			failedLines = bytes.Count(pending, []byte("\n"))
			return true
		case n > from && n <= to:
			return true
		}
		return false
	}
	sink = jsonl.NewSink(effectortest.AppendFile(t, results))
	disk.hook(t, sink)
	src, err := jsonl.OpenFile(intents)
	if err != nil {
		t.Fatal(err)
	}
	err = effector.Serve(context.Background(), src, sink, e, hostileQuiet, effector.WithRetryBackoff(time.Millisecond, time.Millisecond))
	src.Close()
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if failedLines < 2 {
		t.Fatalf("the failed fsync covered %d result lines, want a batch of several", failedLines)
	}
	disk.crash(t)
	checkCovered(t, ck, results, all)

	serveToEnd(t, intents, results, e)
	ids, bad := wholeResults(t, results)
	for i, in := range all {
		if ids[in.ID] == 0 {
			t.Errorf("intent %d has no result after the restart: its result line was lost and it was not delivered again", i)
		}
		if c := calls.Of(in.ID); c != 1 {
			t.Errorf("intent %d ran %d times, want once", i, c)
		}
	}
	if bad != 0 {
		t.Errorf("%d results lines are not whole results", bad)
	}
}

// fullDisk writes its first write up to the middle of its last line and
// fails it, as a disk that
// fills up mid-line does, and fails every write after it (nothing written)
// until freed.
type fullDisk struct {
	w      io.Writer
	mu     sync.Mutex
	full   bool
	failed chan struct{}
}

func (d *fullDisk) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.full {
		d.full = true
		last := bytes.LastIndexByte(p[:len(p)-1], '\n') + 1 // where its last line starts
		n, _ := d.w.Write(p[:last+(len(p)-last)/2])
		close(d.failed)
		return n, errors.New("no space left on device")
	}
	return 0, errors.New("no space left on device")
}

// A results file can end in part of a line: a write that the disk filled up
// mid-line and that was never completed (Serve stopped meanwhile), or a
// power loss that kept part of a write not yet synced. The next effector on
// that file must not glue its first result line onto the fragment, where no
// consumer can read it: its intent would be acknowledged with no readable
// result.
func TestServeJSONLResultsFileEndingInAFragmentKeepsTheNextResultWhole(t *testing.T) {
	t.Parallel()
	t.Run("a disk full mid-line, then a restart", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		const n = 20
		intents, all, _ := batchInput(t, dir, "enospc", n)
		results := filepath.Join(dir, "results.jsonl")
		e, calls := effectortest.Effector(t, serveStore(t, filepath.Join(dir, "dedup.db")))
		sink := jsonl.NewSink(effectortest.AppendFile(t, results))
		disk := &fullDisk{failed: make(chan struct{})}
		jsonl.HookSink(sink, func(w io.Writer) io.Writer { disk.w = w; return disk }, nil)
		src, err := jsonl.OpenFile(intents)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-disk.failed; cancel() }()
		err = effector.Serve(ctx, src, sink, e, hostileQuiet, effector.WithWorkers(4), effector.WithDrainTimeout(0), effector.WithRetryBackoff(time.Millisecond, time.Millisecond))
		src.Close()
		var ue *effector.UnansweredError
		if !errors.As(err, &ue) {
			t.Fatalf("Serve on a full disk, stopped = %v, want an *UnansweredError", err)
		}
		if b, _ := os.ReadFile(results); len(b) == 0 || b[len(b)-1] == '\n' {
			t.Fatalf("results after the disk filled mid-line: %q, want them to end in part of a line", b)
		}

		// The disk is freed; a restarted effector goes on with the same files.
		e2, calls2 := effectortest.Effector(t, serveStore(t, filepath.Join(dir, "dedup.db")))
		serveToEnd(t, intents, results, e2, effector.WithWorkers(4))
		ids, _ := wholeResults(t, results)
		for i, in := range all {
			if ids[in.ID] == 0 {
				t.Errorf("intent %d has no whole result line", i)
			}
			if c := calls.Of(in.ID) + calls2.Of(in.ID); c != 1 {
				t.Errorf("intent %d ran %d times across both runs, want once", i, c)
			}
		}
	})
	t.Run("a power loss that kept part of a write", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		const n = 5
		intents, all, _ := batchInput(t, dir, "torn-results", n)
		results := filepath.Join(dir, "results.jsonl")
		effectortest.WriteFile(t, results, `{"intent_id":"an-earlier-one","entity_key":"ZQ==","se`)
		e, _ := effectortest.Effector(t, effector.NewMemoryStore())
		serveToEnd(t, intents, results, e)
		ids, _ := wholeResults(t, results)
		for i, in := range all {
			if ids[in.ID] == 0 {
				t.Errorf("intent %d has no whole result line", i)
			}
		}
	})
}

// coveredBy fails if the checkpoint on disk has passed an intent that has
// no result line in results (the bytes a disk holds).
func coveredBy(ck string, results []byte, all []*intent.Intent) error {
	b, err := os.ReadFile(ck)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var off int64
	var line int
	if _, err := fmt.Sscanf(string(b), "%d %d", &off, &line); err != nil {
		return fmt.Errorf("checkpoint %q: %v", b, err)
	}
	ids := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(results))
	for sc.Scan() {
		var r intent.Result
		if r.UnmarshalJSON(sc.Bytes()) == nil {
			ids[r.IntentID] = true
		}
	}
	for i := range min(line, len(all)) {
		if !ids[all[i].ID] {
			return fmt.Errorf("the checkpoint on disk is at line %d, past line %d, whose result is not durable", line, i+1)
		}
	}
	return nil
}

// The caller's context ends while a batch's results are being written, or
// while their fsync runs, and the drain timeout is zero: when Serve returns,
// every intent the checkpoint on disk has passed has its result on disk
// (after a power loss at that moment), and a restarted effector on a new
// SQLite handle answers every intent, none run twice.
func TestServeJSONLCancelledMidBatchAcknowledgesOnlyDurableResults(t *testing.T) {
	t.Parallel()
	for _, at := range []string{"write", "fsync"} {
		t.Run("cancelled in the "+at, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			const n = 300
			intents, all, _ := batchInput(t, dir, "cancel-"+at, n)
			ck := intents + ".ack"
			results := filepath.Join(dir, "results.jsonl")
			db := filepath.Join(dir, "dedup.db")
			e, calls := effectortest.Effector(t, serveStore(t, db))
			ctx, cancel := context.WithCancel(context.Background())
			disk := &hostileDisk{path: results}
			var checkErr error
			disk.onSync = func(k int, pending []byte) bool {
				disk.mu.Lock()
				if err := coveredBy(ck, disk.durable, all); err != nil && checkErr == nil {
					checkErr = err
				}
				disk.mu.Unlock()
				// At the first: Serve's batches are large enough that 300
				// intents may take few writes and fsyncs.
				if at == "fsync" {
					cancel()
				}
				return false
			}
			sink := jsonl.NewSink(effectortest.AppendFile(t, results))
			disk.hook(t, sink)
			writes := 0
			jsonl.HookSink(sink, func(w io.Writer) io.Writer {
				return writerFunc(func(p []byte) (int, error) {
					if writes++; at == "write" && writes == 1 {
						cancel()
					}
					return w.Write(p)
				})
			}, nil)
			src, err := jsonl.OpenFile(intents)
			if err != nil {
				t.Fatal(err)
			}
			err = effector.Serve(ctx, src, sink, e, hostileQuiet, effector.WithWorkers(8), effector.WithDrainTimeout(0))
			src.Close()
			var ue *effector.UnansweredError
			if err != nil && !errors.As(err, &ue) {
				t.Fatalf("Serve cancelled mid-batch = %v, want nil or an *UnansweredError", err)
			}
			if ctx.Err() == nil {
				t.Fatalf("Serve returned %v before it was cancelled", err)
			}
			// The power goes as Serve returns.
			disk.mu.Lock()
			if err := coveredBy(ck, disk.durable, all); err != nil && checkErr == nil {
				checkErr = err
			}
			disk.mu.Unlock()
			if checkErr != nil {
				t.Fatal(checkErr)
			}
			disk.crash(t)

			e2, calls2 := effectortest.Effector(t, serveStore(t, db))
			serveToEnd(t, intents, results, e2, effector.WithWorkers(8))
			ids, bad := wholeResults(t, results)
			for i, in := range all {
				if ids[in.ID] == 0 {
					t.Errorf("intent %d has no result after the restart", i)
				}
				if c := calls.Of(in.ID) + calls2.Of(in.ID); c != 1 {
					t.Errorf("intent %d ran %d times across both runs, want once", i, c)
				}
			}
			if bad != 0 {
				t.Errorf("%d results lines are not whole results", bad)
			}
			if _, line := readCheckpoint(t, ck); line != n {
				t.Errorf("checkpoint at line %d after the restart, want %d", line, n)
			}
		})
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Lines that are no intent, a forged intent (its id is not its position's),
// a line longer than the limit and than any read buffer, and the same intent
// twice within the read-ahead window and again hundreds of lines later, all
// among good lines served by many workers: each bad line is dead-lettered
// with its bytes and offset (the forged one refused, with no result), none
// blocks the checkpoint, which ends at the end of the file; every delivery
// of a good intent has a result, each intent runs once; and a restart on
// the same files delivers nothing again.
func TestServeJSONLHostileLinesInABatchAreAnsweredAndNeverHoldTheCheckpoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n, limit = 400, 4096
	var b strings.Builder
	var all []*intent.Intent
	type bad struct {
		offset int64
		text   string
	}
	var bads []bad
	addBad := func(text string) {
		bads = append(bads, bad{int64(b.Len()), text})
		b.WriteString(text + "\n")
	}
	forged := effectortest.Intent("hostile", 1, 9999)
	forged.ID = effectortest.Intent("hostile", 1, 0).ID // another step's id
	forged.ArgsJSON = []byte(`{"key":"forged"}`)
	for i := range n {
		in := effectortest.Intent("hostile", 1, uint32(i))
		all = append(all, in)
		b.WriteString(effectortest.Line(t, in))
		switch i {
		case 10:
			b.WriteString(effectortest.Line(t, in)) // again at once
		case 20:
			addBad(`{"intent_id": 12, oops}`)
		case 30:
			b.WriteString(effectortest.Line(t, forged))
		case 40:
			addBad(`{"intent_id":"` + strings.Repeat("x", 3*limit+100) + `"}`)
		case 50:
			b.WriteString("\n   \n")
		case 350:
			b.WriteString(effectortest.Line(t, all[10])) // again, past the read-ahead
			b.WriteString(effectortest.Line(t, all[60]))
		}
	}
	intents := filepath.Join(dir, "intents.jsonl")
	effectortest.WriteFile(t, intents, b.String())
	results := filepath.Join(dir, "results.jsonl")
	// Every third intent is slow: it waits for the tool of the intent two
	// after it, so that results complete out of order.
	started := make([]chan struct{}, n)
	for i := range started {
		started[i] = make(chan struct{})
	}
	index := map[string]int{}
	for i, in := range all {
		index[in.ID] = i
	}
	var once sync.Map
	hook := func(ctx context.Context) error {
		info, _ := effector.IntentFrom(ctx)
		i, ok := index[info.ID]
		if !ok {
			return nil
		}
		if _, dup := once.LoadOrStore(i, true); !dup {
			close(started[i])
		}
		if i%3 == 0 && i+2 < n {
			<-started[i+2]
		}
		return nil
	}
	store := effector.NewMemoryStore()
	e, calls := effectortest.EffectorWithHooks(t, store, []func(context.Context) error{hook})
	var mu sync.Mutex
	var dead []effector.Delivery
	deadLetter := effector.WithEntryDeadLetter(func(ctx context.Context, d effector.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		dead = append(dead, d)
		return nil
	})
	src, err := jsonl.OpenFile(intents, jsonl.WithMaxLineBytes(limit))
	if err != nil {
		t.Fatal(err)
	}
	if err := effector.Serve(context.Background(), src, jsonl.NewSink(effectortest.AppendFile(t, results)), e, hostileQuiet, deadLetter, effector.WithWorkers(8)); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	src.Close()
	if len(dead) != len(bads) {
		t.Fatalf("%d entries dead-lettered, want %d", len(dead), len(bads))
	}
	slices.SortFunc(dead, func(a, b effector.Delivery) int { return int(a.Offset - b.Offset) })
	for i, d := range dead {
		want := bads[i]
		if d.Offset != want.offset || !strings.HasPrefix(want.text, string(d.Bytes)) || len(d.Bytes) == 0 || len(d.Bytes) > limit || d.Err == nil {
			t.Errorf("dead letter %d: offset %d, %d bytes, error %v; want offset %d and the line's first bytes (at most %d)", i, d.Offset, len(d.Bytes), d.Err, want.offset, limit)
		}
	}
	ids, nbad := wholeResults(t, results)
	if nbad != 0 {
		t.Errorf("%d results lines are not whole results", nbad)
	}
	for i, in := range all {
		want := 1
		switch i {
		case 0:
			// The forged line carries intent 0's id: refused, with no result.
		case 10:
			want = 3
		case 60:
			want = 2
		}
		if ids[in.ID] != want {
			t.Errorf("intent %d has %d result lines, want %d (one per delivery)", i, ids[in.ID], want)
		}
		if c := calls.Of(in.ID); c != 1 {
			t.Errorf("intent %d ran %d times, want once", i, c)
		}
	}
	if off, line := readCheckpoint(t, intents+".ack"); off != int64(b.Len()) || line != strings.Count(b.String(), "\n") {
		t.Fatalf("checkpoint at line %d (byte %d), want the end: line %d (byte %d)", line, off, strings.Count(b.String(), "\n"), b.Len())
	}

	// A restart delivers nothing again.
	src, err = jsonl.OpenFile(intents, jsonl.WithMaxLineBytes(limit))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if d, err := src.Receive(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("Receive after a restart at the end = %+v, %v; want io.EOF", d, err)
	}
}

// The checkpoint cannot be saved (its temporary file's name is taken by a
// directory), and Serve is stopped while it retries: it returns an
// *UnansweredError, and a restart once saves work again, on a new SQLite
// handle, answers every intent without running any again (what it delivers
// again is answered from the store, with the recorded result) and ends
// with the checkpoint at the end.
func TestServeJSONLStoppedWhileCheckpointSavesFailLosesNothingOnRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n = 40
	intents, all, ends := batchInput(t, dir, "ckstop", n)
	ck := intents + ".ack"
	blocker := ck + ".tmp"
	if err := os.Mkdir(blocker, 0o700); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "results.jsonl")
	db := filepath.Join(dir, "dedup.db")
	e, calls := effectortest.Effector(t, serveStore(t, db))
	src, err := jsonl.OpenFile(intents)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- effector.Serve(ctx, src, jsonl.NewSink(effectortest.AppendFile(t, results)), e, effector.WithWorkers(4),
			effector.WithServeLogger(slog.New(slog.NewTextHandler(&logs, nil))), effector.WithRetryBackoff(time.Millisecond, time.Millisecond))
	}()
	for {
		if ids, _ := wholeResults(t, results); len(ids) == n && strings.Contains(logs.String(), "acknowledging intent failed; retrying") {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Serve returned %v while no checkpoint could be saved", err)
		default:
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	err = <-done
	src.Close()
	var ue *effector.UnansweredError
	if !errors.As(err, &ue) || ue.Unanswered == 0 {
		t.Fatalf("Serve stopped while no checkpoint could be saved = %v, want an *UnansweredError", err)
	}
	if _, err := os.Stat(ck); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a checkpoint file though no save could succeed: %v", err)
	}
	first := effectortest.Results(t, results)

	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	e2, calls2 := effectortest.Effector(t, serveStore(t, db))
	serveToEnd(t, intents, results, e2, effector.WithWorkers(4))
	got := effectortest.Results(t, results)
	for i, in := range all {
		if c := calls.Of(in.ID) + calls2.Of(in.ID); c != 1 {
			t.Errorf("intent %d ran %d times across both runs, want once", i, c)
		}
		rs := got[in.ID]
		if len(rs) == 0 {
			t.Errorf("intent %d has no result", i)
			continue
		}
		for _, r := range rs {
			if r.CompletedAtMs != first[in.ID][0].CompletedAtMs || r.Status != intent.StatusOK {
				t.Errorf("intent %d: a result after the restart differs from the first (%s at %d ms, then %s at %d ms): it was not answered from the store", i, first[in.ID][0].Status, first[in.ID][0].CompletedAtMs, r.Status, r.CompletedAtMs)
			}
		}
	}
	if off, line := readCheckpoint(t, ck); line != n || off != ends[n-1] {
		t.Fatalf("checkpoint at line %d (byte %d), want the end %d (byte %d)", line, off, n, ends[n-1])
	}
}

// A producer still writing: the file ends in half a line while Serve runs,
// and the producer finishes it, and writes more, half a line at a time, as
// the intents before run. Serve waits for each line whole, answers every
// intent once, and ends with the checkpoint at the end of the file.
func TestServeJSONLFollowsAProducerWritingHalfLinesWhileItRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var all []*intent.Intent
	var lines []string
	for i := range 13 {
		in := effectortest.Intent("producer", 1, uint32(i))
		all = append(all, in)
		lines = append(lines, effectortest.Line(t, in))
	}
	half := func(s string) (string, string) { return s[:len(s)/2], s[len(s)/2:] }
	a11, b11 := half(lines[10])
	a13, b13 := half(lines[12])
	intents := filepath.Join(dir, "intents.jsonl")
	effectortest.WriteFile(t, intents, strings.Join(lines[:10], "")+a11)
	appendText := func(s string) {
		f, err := os.OpenFile(intents, os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString(s)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			t.Error(err)
		}
	}
	hook := func(ctx context.Context) error {
		switch info, _ := effector.IntentFrom(ctx); info.ID {
		case all[9].ID:
			appendText(b11 + lines[11] + a13)
		case all[11].ID:
			appendText(b13)
		}
		return nil
	}
	e, calls := effectortest.EffectorWithHooks(t, effector.NewMemoryStore(), []func(context.Context) error{hook})
	results := filepath.Join(dir, "results.jsonl")
	src, err := jsonl.OpenFile(intents, jsonl.WithTornLineWait(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := effector.Serve(context.Background(), src, jsonl.NewSink(effectortest.AppendFile(t, results)), e, hostileQuiet, effector.WithWorkers(4)); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	ids, bad := wholeResults(t, results)
	for i, in := range all {
		if ids[in.ID] != 1 || calls.Of(in.ID) != 1 {
			t.Errorf("intent %d: %d results, ran %d times; want one and once", i, ids[in.ID], calls.Of(in.ID))
		}
	}
	if bad != 0 {
		t.Errorf("%d results lines are not whole results", bad)
	}
	size := len(strings.Join(lines, ""))
	if off, line := readCheckpoint(t, intents+".ack"); off != int64(size) || line != len(lines) {
		t.Fatalf("checkpoint at line %d (byte %d), want the end: line %d (byte %d)", line, off, len(lines), size)
	}
}

// Many workers, slow intents among fast ones, each slow one finishing only
// after intents behind it: at every fsync of the results and whenever a tool
// starts, the checkpoint on disk covers only intents whose results are
// durable, however out of order they complete.
func TestServeJSONLOutOfOrderCompletionNeverMovesTheCheckpointPastADurableGap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n = 500
	intents, all, ends := batchInput(t, dir, "ooo-many", n)
	ck := intents + ".ack"
	results := filepath.Join(dir, "results.jsonl")
	started := make([]chan struct{}, n)
	for i := range started {
		started[i] = make(chan struct{})
	}
	index := map[string]int{}
	for i, in := range all {
		index[in.ID] = i
	}
	disk := &hostileDisk{path: results}
	var checkMu sync.Mutex
	var checkErr error
	check := func() {
		// The disk stays as it is while the checkpoint is read: durable
		// results read before it could be older than it.
		disk.mu.Lock()
		err := coveredBy(ck, disk.durable, all)
		disk.mu.Unlock()
		if err != nil {
			checkMu.Lock()
			if checkErr == nil {
				checkErr = err
			}
			checkMu.Unlock()
		}
	}
	hook := func(ctx context.Context) error {
		info, _ := effector.IntentFrom(ctx)
		i := index[info.ID]
		check()
		close(started[i])
		if i%5 == 0 && i+4 < n {
			<-started[i+4] // slow: the four after it are on their way
		}
		return nil
	}
	e, calls := effectortest.EffectorWithHooks(t, effector.NewMemoryStore(), []func(context.Context) error{hook})
	disk.onSync = func(int, []byte) bool { check(); return false }
	sink := jsonl.NewSink(effectortest.AppendFile(t, results))
	disk.hook(t, sink)
	src, err := jsonl.OpenFile(intents)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := effector.Serve(context.Background(), src, sink, e, hostileQuiet, effector.WithWorkers(16)); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	check()
	if checkErr != nil {
		t.Fatal(checkErr)
	}
	for i, in := range all {
		if calls.Of(in.ID) != 1 {
			t.Errorf("intent %d ran %d times, want once", i, calls.Of(in.ID))
		}
	}
	if off, line := readCheckpoint(t, ck); line != n || off != ends[n-1] {
		t.Fatalf("checkpoint at line %d (byte %d), want the end %d (byte %d)", line, off, n, ends[n-1])
	}
}

// serveToEnd runs Serve, as a restarted process does, over the intents file
// to its end, appending results to the results file; an error fails the
// test.
func serveToEnd(t *testing.T, intents, results string, p effector.Processor, opts ...effector.ServeOption) {
	t.Helper()
	src, err := jsonl.OpenFile(intents)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := effector.Serve(context.Background(), src, jsonl.NewSink(effectortest.AppendFile(t, results)), p, append([]effector.ServeOption{hostileQuiet}, opts...)...); err != nil {
		t.Fatalf("Serve of %s to its end: %v", intents, err)
	}
}
