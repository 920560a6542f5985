package effector

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/beam-agents/toolreg/intent"
)

// watchdog decides, once, whether a function's return or its interruption
// (its timeout, or the caller's context ending) makes its result.
type watchdog struct {
	state       atomic.Int32
	wg          sync.WaitGroup // done when an interruption's result is recorded
	interrupted *interruption  // only an interrupted execution has one

	// Its place in the timeouts queue of its timeout.
	exec       *execution // timed out at exec.timeoutAt
	prev, next *watchdog
	queue      *watchQueue
}

const (
	running int32 = iota
	returned
	interrupted
)

// timeouts enforces the tool timeouts of all of an Effector's executions
// with one timer, rather than a runtime timer per execution (an allocation
// and a timer-heap update on the path of every intent, and more wake-ups of
// idle threads). Executions with the same timeout time out in the order they
// started, so each timeout has a queue in deadline order, and the timer is
// armed for the earliest head.
type timeouts struct {
	mu     sync.Mutex
	queues map[time.Duration]*watchQueue
	timer  *time.Timer
	at     int64 // the monoNow reading the timer fires at; 0 when it is not armed
}

type watchQueue struct{ head, tail *watchdog }

// interruption is what an interruption recorded: the result, and the error
// if it could not be recorded.
type interruption struct {
	res intent.Result
	err error
}

// add watches w, and times out w.exec in its own goroutine if w is still
// queued at w.exec.timeoutAt.
func (ts *timeouts) add(w *watchdog, timeout time.Duration) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	q := ts.queues[timeout]
	if q == nil {
		if ts.queues == nil {
			ts.queues = make(map[time.Duration]*watchQueue)
		}
		q = &watchQueue{}
		ts.queues[timeout] = q
	}
	// Nearly always the tail; a goroutine that read the clock a moment before
	// another may come in just behind it.
	after := q.tail
	for after != nil && after.exec.timeoutAt > w.exec.timeoutAt {
		after = after.prev
	}
	w.queue, w.prev = q, after
	if after == nil {
		w.next, q.head = q.head, w
	} else {
		w.next, after.next = after.next, w
	}
	if w.next == nil {
		q.tail = w
	} else {
		w.next.prev = w
	}
	if ts.at == 0 || w.exec.timeoutAt < ts.at {
		ts.arm(w.exec.timeoutAt)
	}
}

// remove stops watching w. It leaves the timer as it is: when it fires for
// nothing, fire re-arms it for the earliest deadline left.
func (ts *timeouts) remove(w *watchdog) {
	ts.mu.Lock()
	ts.unlink(w)
	ts.mu.Unlock()
}

func (ts *timeouts) unlink(w *watchdog) {
	q := w.queue
	if q == nil {
		return
	}
	if w.prev == nil {
		q.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		q.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.queue, w.prev, w.next = nil, nil, nil
}

func (ts *timeouts) arm(at int64) {
	ts.at = at
	d := time.Duration(at - monoNow())
	if ts.timer == nil {
		ts.timer = time.AfterFunc(d, ts.fire)
	} else {
		ts.timer.Reset(d)
	}
}

func (ts *timeouts) fire() {
	now := monoNow()
	var due []*watchdog
	ts.mu.Lock()
	ts.at = 0
	var next int64
	for _, q := range ts.queues {
		for q.head != nil && q.head.exec.timeoutAt <= now {
			w := q.head
			ts.unlink(w)
			due = append(due, w)
		}
		if q.head != nil && (next == 0 || q.head.exec.timeoutAt < next) {
			next = q.head.exec.timeoutAt
		}
	}
	if next != 0 {
		ts.arm(next)
	}
	ts.mu.Unlock()
	for _, w := range due {
		go w.exec.timedOut()
	}
}
