package effector

import "sync/atomic"

// Stats counts events of an Effector an operator should see; export them to
// your metrics.
type Stats struct {
	// Detached counts executions whose caller's context ended while the tool
	// function ran: the function ran on and its outcome was recorded, or will
	// be, unless the process exited first (see DetachedError).
	Detached uint64
	// Unrecorded counts tool runs whose result the store could not record
	// before the lease ended (see UnrecordedError). Each is an intent its next
	// owner runs again as reclaimed: alert on it.
	Unrecorded uint64
}

type stats struct {
	detached, unrecorded atomic.Uint64
}

// Stats returns the effector's counters since New.
func (e *Effector) Stats() Stats {
	return Stats{Detached: e.stats.detached.Load(), Unrecorded: e.stats.unrecorded.Load()}
}
