// Package handedout keeps what a source needs to acknowledge each delivery
// it handed out and has not yet acknowledged (a stream entry id, a row's id
// and claim token, a message), so that its effector.BatchAcker can find it
// again from the delivery values Serve gives back.
//
// Entries are keyed by the delivery's *intent.Intent, which the source
// allocates afresh for each delivery and Serve passes on unchanged: unlike a
// position or an intent id, it is never shared by two deliveries, even by
// two deliveries of one entry. A delivery whose intent is not in the table
// (one from another source, or one a wrapper re-decoded) is not found, and
// the source refuses the batch rather than acknowledge something else.
package handedout

import (
	"sync"

	"github.com/beam-agents/toolreg/intent"
)

// Table maps the intents of deliveries handed out to what acknowledges
// them. It is safe for concurrent use. The zero value is ready.
type Table[T any] struct {
	mu sync.Mutex
	m  map[*intent.Intent]T
}

// Put records v for the delivery of in.
func (t *Table[T]) Put(in *intent.Intent, v T) {
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[*intent.Intent]T)
	}
	t.m[in] = v
	t.mu.Unlock()
}

// Get returns what was recorded for in.
func (t *Table[T]) Get(in *intent.Intent) (T, bool) {
	t.mu.Lock()
	v, ok := t.m[in]
	t.mu.Unlock()
	return v, ok
}

// Delete forgets in, once its delivery is acknowledged.
func (t *Table[T]) Delete(in *intent.Intent) {
	t.mu.Lock()
	delete(t.m, in)
	t.mu.Unlock()
}

// Len says how many deliveries are recorded.
func (t *Table[T]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// Clear forgets every delivery (the source is closed).
func (t *Table[T]) Clear() {
	t.mu.Lock()
	clear(t.m)
	t.mu.Unlock()
}
