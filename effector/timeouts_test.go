package effector

import (
	"slices"
	"testing"
	"time"
)

// TestTimeoutsKeepEachQueueInDeadlineOrder holds the watchdog queues to the
// order fire relies on (it stops at the first head not yet due): whatever
// order executions are added in, each timeout's queue runs from the earliest
// deadline to the latest, and the timer is armed for the earliest of all.
func TestTimeoutsKeepEachQueueInDeadlineOrder(t *testing.T) {
	var ts timeouts
	t.Cleanup(func() {
		if ts.timer != nil {
			ts.timer.Stop()
		}
	})
	base := monoNow() + int64(time.Hour) // far enough that the timer never fires
	add := func(timeout time.Duration, at int64) *watchdog {
		x := &execution{}
		x.timeoutAt = base + at
		x.watchdog.exec = x
		ts.add(&x.watchdog, timeout)
		return &x.watchdog
	}
	order := func(timeout time.Duration) []int64 {
		t.Helper()
		q := ts.queues[timeout]
		var fwd, back []int64
		for w := q.head; w != nil; w = w.next {
			fwd = append(fwd, w.exec.timeoutAt-base)
		}
		for w := q.tail; w != nil; w = w.prev {
			back = append(back, w.exec.timeoutAt-base)
		}
		slices.Reverse(back)
		if !slices.Equal(fwd, back) {
			t.Fatalf("queue %v read forwards %v but backwards %v: its links are broken", timeout, fwd, back)
		}
		return fwd
	}

	add(time.Minute, 30)
	mid := add(time.Minute, 20) // read the clock before the first, queued after it
	add(time.Minute, 10)        // before both
	add(time.Minute, 40)
	add(time.Second, 50) // another timeout: a queue of its own
	if got, want := order(time.Minute), []int64{10, 20, 30, 40}; !slices.Equal(got, want) {
		t.Errorf("deadlines in the queue = %v, want %v", got, want)
	}
	if got := ts.at - base; got != 10 {
		t.Errorf("the timer is armed for deadline %d, want the earliest, 10", got)
	}

	ts.remove(mid)
	ts.remove(mid) // a watchdog already removed (or fired) is left alone
	if got, want := order(time.Minute), []int64{10, 30, 40}; !slices.Equal(got, want) {
		t.Errorf("deadlines after removing 20 = %v, want %v", got, want)
	}
	if got, want := order(time.Second), []int64{50}; !slices.Equal(got, want) {
		t.Errorf("deadlines in the other queue = %v, want %v", got, want)
	}
}
