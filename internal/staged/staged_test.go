package staged

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// recorder is a write function that records each batch, holds the first
// one until gate closes (if set), and fails the items fail says.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
	ctxs    []context.Context
	started chan struct{} // closed when the first write starts
	gate    chan struct{}
	fail    func(int) bool
}

func newRecorder() *recorder { return &recorder{started: make(chan struct{})} }

func (r *recorder) write(ctx context.Context, items []int, errs []error) {
	r.mu.Lock()
	r.batches = append(r.batches, slices.Clone(items))
	r.ctxs = append(r.ctxs, ctx)
	first := len(r.batches) == 1
	r.mu.Unlock()
	if first {
		close(r.started)
		if r.gate != nil {
			<-r.gate
		}
	}
	for i, v := range items {
		if r.fail != nil && r.fail(v) {
			errs[i] = fmt.Errorf("item %d failed", v)
		}
	}
}

func (r *recorder) written() [][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches)
}

// Each wait returns its own item's outcome, and every wait of a write
// returns without writing again.
func TestEachWaitReturnsItsItemsOutcome(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	r.fail = func(v int) bool { return v%3 == 0 }
	w := New(r.write)
	var waits []func() error
	for v := range 10 {
		wait, err := w.Stage(context.Background(), v)
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, wait)
	}
	for round := range 2 {
		for v, wait := range waits {
			if err := wait(); (err != nil) != (v%3 == 0) {
				t.Fatalf("round %d: item %d: %v", round, v, err)
			}
		}
	}
	if got := r.written(); len(got) != 1 || !slices.Equal(got[0], []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) || w.Writes.Load() != 1 {
		t.Fatalf("writes %v, want one of 0..9 in order", got)
	}
}

// Items staged while a write is under way go to the next write, whose waits
// wait for the first to finish: writes run one at a time, in staged order.
func TestItemsStagedDuringAWriteGoToTheNext(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	r.gate = make(chan struct{})
	w := New(r.write)
	first, _ := w.Stage(context.Background(), 1)
	done := make(chan error, 1)
	go func() { done <- first() }()
	<-r.started
	second, _ := w.Stage(context.Background(), 2)
	third, _ := w.Stage(context.Background(), 3)
	secondDone := make(chan error, 1)
	go func() { secondDone <- second() }()
	select {
	case err := <-secondDone:
		t.Fatalf("the second write ran (%v) while the first was under way", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(r.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-secondDone; err != nil {
		t.Fatal(err)
	}
	if err := third(); err != nil {
		t.Fatal(err)
	}
	if got := r.written(); fmt.Sprint(got) != "[[1] [2 3]]" {
		t.Fatalf("writes %v, want [[1] [2 3]]", got)
	}
}

// One stager's cancellation neither fails nor ends the write of the
// others' items; its own item is left out.
func TestOneStagerGivingUpFailsOnlyItsItem(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	w := New(r.write)
	ctx, cancel := context.WithCancel(context.Background())
	gone, _ := w.Stage(ctx, 1)
	kept, _ := w.Stage(context.Background(), 2)
	cancel()
	if _, err := w.Stage(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stage with an ended context: %v, want context.Canceled", err)
	}
	if err := gone(); !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled stager's wait: %v", err)
	}
	if err := kept(); err != nil {
		t.Fatal(err)
	}
	if got := r.written(); fmt.Sprint(got) != "[[2]]" {
		t.Fatalf("writes %v, want [[2]]", got)
	}
}

func TestBatchContext(t *testing.T) {
	t.Parallel()
	shared, cancel := context.WithCancel(context.Background())
	defer cancel()
	if ctx, stop := batchContext([]context.Context{shared, shared}); ctx != shared {
		t.Error("items staged with one context: the write's is not that context")
	} else {
		stop()
	}
	short, cancelShort := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancelShort()
	long, cancelLong := context.WithTimeout(context.Background(), time.Hour)
	defer cancelLong()
	ctx, stop := batchContext([]context.Context{short, long})
	defer stop()
	<-short.Done()
	if ctx.Err() != nil {
		t.Error("the write's context ended with the shortest deadline")
	}
	if d, ok := ctx.Deadline(); !ok || d.Before(time.Now().Add(59*time.Minute)) {
		t.Errorf("the write's deadline %v, want the latest", d)
	}
	ctx2, stop2 := batchContext([]context.Context{long, context.Background()})
	defer stop2()
	if _, ok := ctx2.Deadline(); ok {
		t.Error("a write with an item without a deadline has one")
	}
}
