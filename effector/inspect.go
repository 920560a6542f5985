package effector

import (
	"context"
	"errors"
	"time"
)

// RecordState is the state of an intent's record in a dedup store, as an
// operator inspects it.
type RecordState int

const (
	// RecordInFlight: claimed, its lease still running.
	RecordInFlight RecordState = iota + 1
	// RecordUnknown: claimed, but the lease ran out without a result: the
	// owner crashed or stalled and may have run the tool, so its effect is
	// unknown. The next delivery runs it again as reclaimed; an operator who
	// knows the outcome can Resolve it instead.
	RecordUnknown
	// RecordDone: its terminal result is stored.
	RecordDone
	// RecordExpired: its result outlived its time-to-live; a sweep or Purge
	// deletes it.
	RecordExpired
)

func (s RecordState) String() string {
	switch s {
	case RecordInFlight:
		return "in_flight"
	case RecordUnknown:
		return "unknown"
	case RecordDone:
		return "done"
	case RecordExpired:
		return "expired"
	}
	return "invalid"
}

// Record is one intent's record in a dedup store.
type Record struct {
	ID       string
	Tool     string // the claimed call's tool name; "" in records of versions before the call was kept
	State    RecordState
	Attempts int
	// Deadline is the lease's end while claimed, the result's expiry once done.
	Deadline time.Time
	Result   []byte // the stored ToolResult bytes when done
}

// Inspector is what `toolreg intents` needs of a store: the stores of this
// module implement it. Each call is one short transaction (or a few for a
// page of Records), so it can run against a store effectors are using.
type Inspector interface {
	// Records calls fn for every record (in id order for SQLite, the
	// server's order for Redis), reading a page at a
	// time; it stops at fn's first error and returns it.
	Records(ctx context.Context, fn func(Record) error) error
	// Record returns the record of id; ok is false if there is none.
	Record(ctx context.Context, id string) (rec Record, ok bool, err error)
	// Resolve stores result (ToolResult bytes) as the terminal result of
	// id, kept for ttl, if and only if its record is RecordUnknown: a record
	// that is done, in flight, or missing is refused with ErrNotResolvable.
	// A result with no entity key and seq 0 (the store keeps no intent to
	// read them from) is given the intent's by Process when it answers the
	// intent's next delivery with it.
	Resolve(ctx context.Context, id string, result []byte, ttl time.Duration) error
	// Purge deletes, in batches, the results that expired at least
	// olderThan ago (every expired one for 0), and lapsed claims older than
	// both that and the store's attempt memory; it returns how many it
	// deleted. It never deletes a result before its time-to-live ends: a
	// redelivery within it must still find the result.
	Purge(ctx context.Context, olderThan time.Duration) (int64, error)
}

// ErrNotResolvable is Resolve's refusal of a record whose effect is not
// unknown.
var ErrNotResolvable = errors.New("effector: only an intent whose effect is unknown (a lapsed claim) can be resolved")

// A ProgressPurger is an Inspector whose Purge can report as it goes, for a
// purge of many records (`toolreg intents purge` shows it on a terminal).
// The SQLite and Postgres stores implement it.
type ProgressPurger interface {
	// PurgeProgress is Purge, calling progress (if not nil) with the
	// running total after each batch it deletes.
	PurgeProgress(ctx context.Context, olderThan time.Duration, progress func(deleted int64)) (int64, error)
}
