package groupcommit

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Callers arriving while a batch runs go in the next batch together; each
// gets back its own op, with the error commit set for it alone.
func TestOpsArrivingDuringABatchShareTheNext(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	var sizes []int
	var mu sync.Mutex
	g := New(64, func(batch []*Op[int]) {
		mu.Lock()
		sizes = append(sizes, len(batch))
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			<-gate // the first batch blocks until the others queued
		}
		for _, o := range batch {
			if o.In%7 == 0 {
				o.Err = errors.New("seven")
			}
		}
	})
	var wg sync.WaitGroup
	wg.Go(func() {
		if o := g.Do(context.Background(), 1); o.Err != nil || o.In != 1 {
			t.Errorf("first op: %+v", o)
		}
	})
	for !g.Leading() {
		time.Sleep(time.Millisecond)
	}
	for g.Batches.Load() == 0 && func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 0 }() {
		time.Sleep(time.Millisecond)
	}
	const n = 30
	for i := 2; i < 2+n; i++ {
		wg.Go(func() {
			o := g.Do(context.Background(), i)
			if (i%7 == 0) != (o.Err != nil) || o.In != i {
				t.Errorf("op %d came back as %d with %v", i, o.In, o.Err)
			}
		})
	}
	for g.Queued() < n {
		time.Sleep(time.Millisecond)
	}
	close(gate)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != n {
		t.Fatalf("batch sizes %v, want [1 %d]", sizes, n)
	}
}

// A caller whose context ends before a batch takes its op gets its context's
// error and its op is never committed; leadership passes on if it held it.
func TestAbandonedOpIsNeverCommitted(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	var committed sync.Map
	var batches atomic.Int32
	g := New(8, func(batch []*Op[string]) {
		if batches.Add(1) == 1 {
			<-gate
		}
		for _, o := range batch {
			committed.Store(o.In, true)
		}
	})
	var wg sync.WaitGroup
	wg.Go(func() { g.Do(context.Background(), "leader") })
	for batches.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var quitErr error
	wg.Go(func() { quitErr = g.Do(ctx, "quitter").Err })
	for g.Queued() < 1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	for g.Queued() > 0 {
		time.Sleep(time.Millisecond)
	}
	wg.Go(func() { g.Do(context.Background(), "later") })
	for g.Queued() < 1 {
		time.Sleep(time.Millisecond)
	}
	close(gate)
	wg.Wait()
	if !errors.Is(quitErr, context.Canceled) {
		t.Errorf("the quitter got %v, want context.Canceled", quitErr)
	}
	if _, ok := committed.Load("quitter"); ok {
		t.Error("an abandoned op was committed")
	}
	if _, ok := committed.Load("later"); !ok {
		t.Error("the op after the abandoned one was never committed")
	}
	if g.Leading() {
		t.Error("a leader remains with nothing queued")
	}
}

// TestContextOutlivesEveryCallerButTheLast: the shared round trip's context
// is ended by none of its callers, and lasts as long as the latest deadline.
func TestContextOutlivesEveryCallerButTheLast(t *testing.T) {
	gone, stop := context.WithCancel(context.Background())
	stop()
	soon, c1 := context.WithTimeout(context.Background(), time.Millisecond)
	defer c1()
	later, c2 := context.WithTimeout(context.Background(), time.Hour)
	defer c2()
	ops := []*Op[int]{{Ctx: gone}, {Ctx: soon, In: 1}, {Ctx: later, In: 2}}
	live := Live(ops)
	if len(live) != 2 || live[0].In != 1 || live[1].In != 2 || ops[0].Err != context.Canceled || ops[1].Err != nil {
		t.Fatalf("Live: %d ops, ended op's Err %v; want the 2 live ones and context.Canceled", len(live), ops[0].Err)
	}
	ctx, cancel := Context(live)
	defer cancel()
	if ctx.Err() != nil {
		t.Fatalf("shared context ended by a caller: %v", ctx.Err())
	}
	if d, ok := ctx.Deadline(); !ok || !d.Equal(func() time.Time { d, _ := later.Deadline(); return d }()) {
		t.Fatalf("shared deadline %v (%v), want the latest caller's", d, ok)
	}
	ctx2, cancel2 := Context([]*Op[int]{{Ctx: soon}, {Ctx: context.Background()}})
	defer cancel2()
	if _, ok := ctx2.Deadline(); ok {
		t.Fatal("shared context has a deadline though one caller has none")
	}
}

// The callers a batch releases come back one by one, a moment apart (a
// claim's caller with its completion): with WithLinger, the next batch waits
// for all of them, so they share one commit instead of each waiting for the
// one after.
func TestLingerWaitsForTheLastBatchsCallers(t *testing.T) {
	t.Parallel()
	const n = 5
	var mu sync.Mutex
	var sizes []int
	release := make(chan struct{})
	g := New(64, func(batch []*Op[int]) {
		mu.Lock()
		sizes = append(sizes, len(batch))
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			<-release
		}
	}).WithLinger(2 * time.Second) // long enough for the callers; short enough to fail, not hang
	var wg sync.WaitGroup
	// Batch 1 holds one op; n-1 queue behind it. Batch 2 waits for batch 1's
	// caller, who comes back: n ops.
	wg.Go(func() {
		g.Do(context.Background(), 0)
		g.Do(context.Background(), 100)
	})
	for g.Batches.Load() == 0 && func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 0 }() {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < n; i++ {
		wg.Go(func() { g.Do(context.Background(), i) })
	}
	for g.Queued() < n-1 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	// Batch 3: the same n callers come back one at a time.
	for i := range n {
		wg.Go(func() { g.Do(context.Background(), 200+i) })
		time.Sleep(2 * time.Millisecond) // well after the leader took over
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if want := []int{1, n, n}; !slices.Equal(sizes, want) {
		t.Fatalf("batch sizes %v, want %v: a batch left without the callers the last one released", sizes, want)
	}
}

// A caller alone never lingers, even with a long delay: the last batch held
// only its own op. When the load drops, a leader waits at most the delay
// once per drop.
func TestLingerLoneCallerAndDroppingLoad(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var sizes []int
	release := make(chan struct{})
	g := New(64, func(batch []*Op[int]) {
		mu.Lock()
		sizes = append(sizes, len(batch))
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			<-release
		}
	}).WithLinger(20 * time.Millisecond)
	var wg sync.WaitGroup
	wg.Go(func() { g.Do(context.Background(), 0) })
	for g.Batches.Load() == 0 && func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 0 }() {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < 3; i++ {
		wg.Go(func() { g.Do(context.Background(), i) })
	}
	for g.Queued() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	// Batch 2 waited out the delay for batch 1's caller, who did not come
	// back; so does the lone caller after it (batch 2 held 2), after which
	// the batches are its own.
	g.Do(context.Background(), 3)
	g.WithLinger(time.Hour) // from here, any wait would hang the test
	for i := range 3 {
		if o := g.Do(context.Background(), 10+i); o.Err != nil {
			t.Fatal(o.Err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []int{1, 2, 1, 1, 1, 1}; !slices.Equal(sizes, want) {
		t.Fatalf("batch sizes %v, want %v", sizes, want)
	}
}

// Ops that queued while a batch ran do not stand in for the callers it
// released: the next batch waits for both, so batches grow to the number of
// busy callers instead of staying at the last one's size.
func TestLingerCountsQueuedAndReleased(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var sizes []int
	release := make(chan struct{})
	g := New(64, func(batch []*Op[int]) {
		mu.Lock()
		sizes = append(sizes, len(batch))
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			<-release
		}
	}).WithLinger(2 * time.Second) // long enough for the late caller; short enough to fail, not hang
	var wg sync.WaitGroup
	wg.Go(func() { g.Do(context.Background(), 0) }) // batch 1: one op, held
	for g.Batches.Load() == 0 && func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 0 }() {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i <= 2; i++ { // queued while batch 1 runs
		wg.Go(func() { g.Do(context.Background(), i) })
	}
	for g.Queued() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	// Batch 2 must wait for batch 1's caller too: 2 queued + 1 released.
	for g.Queued() < 2 || g.Batches.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(2 * time.Millisecond)
	wg.Go(func() { g.Do(context.Background(), 3) }) // batch 1's caller, back
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if want := []int{1, 3}; !slices.Equal(sizes, want) {
		t.Fatalf("batch sizes %v, want %v", sizes, want)
	}
}

// A streaming leader runs the ops queued when it took over at once, and
// takes those queued while they run from more: one batch, each op with its
// own error. Ops queued after more said no more wait for the next batch.
func TestStreamTakesOpsQueuedWhileItRuns(t *testing.T) {
	t.Parallel()
	running := make(chan struct{})
	proceed := make(chan struct{})
	var mu sync.Mutex
	var batches [][]int
	g := NewStream(64, func(batch []*Op[int], more func() []*Op[int]) {
		var got []int
		for ops := batch; len(ops) > 0; ops = more() {
			for _, o := range ops {
				got = append(got, o.In)
				if o.In%3 == 0 {
					o.Err = errors.New("three")
				}
			}
			if len(got) == 1 && got[0] == 1 {
				running <- struct{}{} // the first op runs; the others queue now
				<-proceed
			}
		}
		mu.Lock()
		batches = append(batches, got)
		first := len(batches) == 1
		mu.Unlock()
		if first {
			running <- struct{}{} // more said no more; a late op queues now
			<-proceed
		}
	}).WithLinger(20 * time.Millisecond) // the second batch waits this long for the first's callers
	var wg sync.WaitGroup
	do := func(i int) {
		wg.Go(func() {
			if o := g.Do(context.Background(), i); (o.Err != nil) != (i%3 == 0) {
				t.Errorf("op %d: err %v", i, o.Err)
			}
		})
	}
	do(1)
	<-running
	for i := 2; i <= 6; i++ {
		do(i)
	}
	for g.Queued() < 5 {
		time.Sleep(time.Millisecond)
	}
	proceed <- struct{}{}
	<-running
	do(7)
	for g.Queued() < 1 {
		time.Sleep(time.Millisecond)
	}
	proceed <- struct{}{}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(batches) == 2 {
		slices.Sort(batches[0]) // 2..6 queued in no set order
	}
	if len(batches) != 2 || !slices.Equal(batches[0], []int{1, 2, 3, 4, 5, 6}) || !slices.Equal(batches[1], []int{7}) {
		t.Fatalf("batches %v, want [[1 2 3 4 5 6] [7]]", batches)
	}
	if g.Batches.Load() != 2 || g.Ops.Load() != 7 {
		t.Fatalf("counted %d batches, %d ops; want 2, 7", g.Batches.Load(), g.Ops.Load())
	}
}

// A streaming leader alone never waits in more, whatever the delay.
func TestStreamLoneCallerNeverWaits(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	g := NewStream(8, func(batch []*Op[int], more func() []*Op[int]) {
		for ops := batch; len(ops) > 0; ops = more() {
			calls.Add(int32(len(ops)))
		}
	}).WithLinger(time.Hour)
	for i := range 5 {
		if o := g.Do(context.Background(), i); o.Err != nil {
			t.Fatal(o.Err)
		}
	}
	if calls.Load() != 5 || g.Batches.Load() != 5 {
		t.Fatalf("%d ops in %d batches, want 5 in 5", calls.Load(), g.Batches.Load())
	}
}

// A caller whose context ends while a streaming leader runs the first ops,
// before more takes its op, gets its context's error and its op is never
// handed to commit; the ops queued beside it still are.
func TestStreamCancelledBeforeMoreTakesIt(t *testing.T) {
	t.Parallel()
	running := make(chan struct{})
	proceed := make(chan struct{})
	var mu sync.Mutex
	var got []string
	g := NewStream(8, func(batch []*Op[string], more func() []*Op[string]) {
		for ops := batch; len(ops) > 0; ops = more() {
			for _, o := range ops {
				mu.Lock()
				got = append(got, o.In)
				mu.Unlock()
				if o.In == "leader" {
					running <- struct{}{}
					<-proceed
				}
			}
		}
	})
	var wg sync.WaitGroup
	wg.Go(func() { g.Do(context.Background(), "leader") })
	<-running
	ctx, cancel := context.WithCancel(context.Background())
	var quitErr error
	wg.Go(func() { quitErr = g.Do(ctx, "quitter").Err })
	wg.Go(func() { g.Do(context.Background(), "stayer") })
	for g.Queued() < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	for g.Queued() > 1 {
		time.Sleep(time.Millisecond)
	}
	proceed <- struct{}{}
	wg.Wait()
	if !errors.Is(quitErr, context.Canceled) {
		t.Errorf("the quitter got %v, want context.Canceled", quitErr)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, []string{"leader", "stayer"}) {
		t.Fatalf("committed %v, want [leader stayer]: the cancelled op was handed over, or the other was not", got)
	}
}
