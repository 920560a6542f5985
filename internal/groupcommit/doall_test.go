package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// recorder is a commit function that records each batch's ops, blocks the
// first batch until gate is closed (if gate is set), and fails the ops
// whose In fail says.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
	gate    chan struct{}
	fail    func(int) bool
}

func (r *recorder) commit(batch []*Op[int]) {
	r.mu.Lock()
	ins := make([]int, len(batch))
	for i, o := range batch {
		ins[i] = o.In
	}
	r.batches = append(r.batches, ins)
	first := len(r.batches) == 1
	r.mu.Unlock()
	if first && r.gate != nil {
		<-r.gate
	}
	for _, o := range batch {
		if r.fail != nil && r.fail(o.In) {
			o.Err = fmt.Errorf("op %d failed", o.In)
		}
	}
}

func (r *recorder) started() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.batches)
}

func (r *recorder) committed() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []int
	for _, b := range r.batches {
		all = append(all, b...)
	}
	return all
}

func seq(lo, hi int) []int {
	var s []int
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

// A caller alone hands all its ops to one batch, which it leads, and gets
// back each op with its own error.
func TestDoAllAloneIsOneBatch(t *testing.T) {
	t.Parallel()
	r := &recorder{fail: func(i int) bool { return i%3 == 0 }}
	g := New(64, r.commit)
	ops := g.DoAll(context.Background(), seq(1, 11))
	if len(ops) != 10 {
		t.Fatalf("%d ops back, want 10", len(ops))
	}
	for i, o := range ops {
		if o.In != i+1 || (o.In%3 == 0) != (o.Err != nil) {
			t.Errorf("op %d came back as %d with %v", i, o.In, o.Err)
		}
	}
	if len(r.batches) != 1 || !slices.Equal(r.batches[0], seq(1, 11)) {
		t.Fatalf("batches %v, want one of 1..10 in order", r.batches)
	}
	if g.Leading() {
		t.Error("a leader remains with nothing queued")
	}
	if g.DoAll(context.Background(), nil) != nil {
		t.Error("DoAll of no ops returned ops")
	}
}

// More ops than the group's size are split over batches of at most the
// size, in their order, and all come back done.
func TestDoAllSplitsWhatExceedsTheSize(t *testing.T) {
	t.Parallel()
	r := &recorder{}
	g := New(8, r.commit)
	ops := g.DoAll(context.Background(), seq(0, 21))
	for _, o := range ops {
		if o.Err != nil || !o.finished {
			t.Fatalf("op %d: finished %v, %v", o.In, o.finished, o.Err)
		}
	}
	want := [][]int{seq(0, 8), seq(8, 16), seq(16, 21)}
	if fmt.Sprint(r.batches) != fmt.Sprint(want) {
		t.Fatalf("batches %v, want %v", r.batches, want)
	}
}

// Ops queued while a batch runs go together into the next, with no other
// caller's op between them, and callers of Do and DoAll share batches.
func TestDoAllOpsStayTogetherBehindARunningBatch(t *testing.T) {
	t.Parallel()
	r := &recorder{gate: make(chan struct{})}
	g := New(64, r.commit)
	var wg sync.WaitGroup
	wg.Go(func() { g.Do(context.Background(), -1) })
	for r.started() == 0 {
		time.Sleep(time.Millisecond)
	}
	wg.Go(func() { g.DoAll(context.Background(), seq(100, 110)) })
	for g.Queued() < 10 {
		time.Sleep(time.Millisecond)
	}
	wg.Go(func() { g.Do(context.Background(), -2) })
	wg.Go(func() { g.DoAll(context.Background(), seq(200, 205)) })
	for g.Queued() < 16 {
		time.Sleep(time.Millisecond)
	}
	close(r.gate)
	wg.Wait()
	if len(r.batches) != 2 {
		t.Fatalf("batches %v, want the first and one more", r.batches)
	}
	next := r.batches[1]
	for _, block := range [][]int{seq(100, 110), seq(200, 205)} {
		i := slices.Index(next, block[0])
		if i < 0 || i+len(block) > len(next) || !slices.Equal(next[i:i+len(block)], block) {
			t.Fatalf("batch %v does not hold %v together", next, block)
		}
	}
}

// A DoAll whose context ends while its ops wait gets its context's error
// for each, none is committed, and leadership passes on.
func TestDoAllAbandonedWhileQueued(t *testing.T) {
	t.Parallel()
	r := &recorder{gate: make(chan struct{})}
	g := New(64, r.commit)
	var wg sync.WaitGroup
	wg.Go(func() { g.Do(context.Background(), -1) })
	for r.started() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var ops []*Op[int]
	wg.Go(func() { ops = g.DoAll(ctx, seq(0, 5)) })
	for g.Queued() < 5 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	for g.Queued() > 0 {
		time.Sleep(time.Millisecond)
	}
	wg.Go(func() {
		if o := g.Do(context.Background(), 99); o.Err != nil {
			t.Errorf("the op after the abandoned ones: %v", o.Err)
		}
	})
	for g.Queued() < 1 {
		time.Sleep(time.Millisecond)
	}
	close(r.gate)
	wg.Wait()
	for _, o := range ops {
		if !errors.Is(o.Err, context.Canceled) {
			t.Errorf("abandoned op %d: %v, want context.Canceled", o.In, o.Err)
		}
	}
	if got := r.committed(); !slices.Equal(got, []int{-1, 99}) {
		t.Fatalf("committed %v, want only the other callers' ops", got)
	}
	if g.Leading() {
		t.Error("a leader remains with nothing queued")
	}
}

// A DoAll whose context ends while a batch holds some of its ops waits for
// that batch: those ops come back as the batch left them, the ones still
// queued with the context's error, never committed.
func TestDoAllCancelledMidWayWaitsForItsTakenOps(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	var mu sync.Mutex
	var batches [][]int
	g := New(4, func(batch []*Op[int]) {
		mu.Lock()
		var ins []int
		for _, o := range batch {
			ins = append(ins, o.In)
		}
		batches = append(batches, ins)
		n := len(batches)
		mu.Unlock()
		if n == 1 {
			<-gate
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	var ops []*Op[int]
	done := make(chan struct{})
	go func() { ops = g.DoAll(ctx, seq(0, 10)); close(done) }()
	for g.Queued() > 6 || func() bool { mu.Lock(); defer mu.Unlock(); return len(batches) == 0 }() {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
		t.Fatal("DoAll returned while a batch held its ops")
	case <-time.After(20 * time.Millisecond):
	}
	close(gate)
	<-done
	for _, o := range ops {
		taken := o.In < 4
		if taken && o.Err != nil || !taken && !errors.Is(o.Err, context.Canceled) {
			t.Errorf("op %d (taken: %v): %v", o.In, taken, o.Err)
		}
	}
	if len(batches) != 1 || !slices.Equal(batches[0], seq(0, 4)) {
		t.Fatalf("batches %v, want only the first four", batches)
	}
}
