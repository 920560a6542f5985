package jsonl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
)

// Concurrent publishers share fsyncs, and none returns before an fsync that
// began after its own line was written: each line is within the bytes the
// file held when some fsync began, by the time its Publish returns.
func TestSinkGroupsFsyncsAndReturnsOnlyWhenSynced(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "results.jsonl")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sink := NewSink(f)
	var syncedBytes atomic.Int64 // the file's size when the last fsync began
	realSync := sink.sync
	sink.sync = func() error {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		err = realSync()
		if err == nil && fi.Size() > syncedBytes.Load() {
			syncedBytes.Store(fi.Size())
		}
		return err
	}
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("intent-%04d", i)
			if err := sink.Publish(context.Background(), intent.Result{IntentID: id, Status: intent.StatusOK}); err != nil {
				t.Error(err)
				return
			}
			// Read the synced size before the file: a later fsync may
			// begin meanwhile, over bytes a read made before it lacks.
			synced := syncedBytes.Load()
			b, err := os.ReadFile(path)
			if err != nil {
				t.Error(err)
				return
			}
			if !bytes.Contains(b[:synced], []byte(id)) {
				t.Errorf("Publish of %s returned before an fsync covered its line", id)
			}
		})
	}
	wg.Wait()
	b, _ := os.ReadFile(path)
	if got := strings.Count(string(b), "\n"); got != n {
		t.Fatalf("%d lines written, want %d", got, n)
	}
	if syncs := sink.syncs.Load(); syncs < 1 || syncs > n {
		t.Fatalf("%d fsyncs for %d lines", syncs, n)
	} else {
		t.Logf("%d lines, %d fsyncs", n, syncs)
	}
}

// Concurrent acks share checkpoint saves, and an ack that moves the
// checkpoint returns only once the file on disk holds it (or a later one).
func TestCheckpointGroupsSavesAndReturnsOnlyWhenSaved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	intents := filepath.Join(dir, "intents.jsonl")
	const n = 200
	var in bytes.Buffer
	for i := range n {
		fmt.Fprintf(&in, "{\"intent_id\":\"i%04d\"}\n", i)
	}
	if err := os.WriteFile(intents, in.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "intents.jsonl.ack")
	src, err := OpenFile(intents, WithCheckpointFile(ck))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ds := make([]effector.Delivery, n)
	for i := range ds {
		if ds[i], err = src.Receive(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// Acknowledge in order from many goroutines at once: ack i may return
	// only once the disk holds line i's end or later, as the lines before it
	// were all acknowledged before it began.
	var wg sync.WaitGroup
	next := make([]chan struct{}, n+1)
	for i := range next {
		next[i] = make(chan struct{})
	}
	close(next[0])
	for i := range n {
		wg.Go(func() {
			<-next[i]
			done := make(chan error, 1)
			go func() { done <- ds[i].Ack(context.Background()) }()
			for !marked(src.ckpt, i) {
				runtime.Gosched()
			}
			close(next[i+1]) // the next ack may start while this one saves
			if err := <-done; err != nil {
				t.Error(err)
				return
			}
			var off int64
			var line int
			b, err := os.ReadFile(ck)
			if err == nil {
				_, err = fmt.Sscanf(string(b), "%d %d", &off, &line)
			}
			if err != nil {
				t.Error(err)
				return
			}
			if line < i+1 {
				t.Errorf("ack of line %d returned with the checkpoint on disk at line %d", i+1, line)
			}
		})
	}
	wg.Wait()
	if got, _ := os.ReadFile(ck); string(got) != fmt.Sprintf("%d %d\n", in.Len(), n) {
		t.Fatalf("checkpoint = %q, want the end of all %d lines", got, n)
	}
	src.ckpt.mu.Lock()
	saves := src.ckpt.saves
	src.ckpt.mu.Unlock()
	t.Logf("%d acks, %d saves", n, saves)
}

// marked reports whether ack has marked line i (from 0) acknowledged.
func marked(c *checkpoint, i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	j := i - c.base
	return j < 0 || c.pending[j].acked
}
