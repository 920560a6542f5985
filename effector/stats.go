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
	// StoreRetries counts store writes Process tried again after they failed
	// (a Complete recording a result, for one); each is also logged at level
	// Warn and counted in MetricStoreRetries. A store that keeps failing
	// ends in Unrecorded.
	StoreRetries uint64
}

type stats struct {
	detached, unrecorded, storeRetries atomic.Uint64
}

// Stats returns the effector's counters since New.
func (e *Effector) Stats() Stats {
	return Stats{Detached: e.stats.detached.Load(), Unrecorded: e.stats.unrecorded.Load(), StoreRetries: e.stats.storeRetries.Load()}
}
