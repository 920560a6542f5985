// Package storetest is the conformance suite every effector.DedupStore must
// pass. A store's own test calls Run with a constructor:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) effector.DedupStore {
//			return newStoreForTest(t) // a fresh, empty store; t.Cleanup closes it
//		})
//	}
//
// A store that takes a clock calls RunWithClock instead, and makes the store
// measure time with the clock it is given: the suite then moves that clock
// forward to end leases and results, instead of sleeping, so it cannot flake
// on a loaded machine.
//
// The subtests describe the contract the effector relies on for
// execute-once: one owner at a time, a lease that ends, completion only by the
// current owner (so a worker that paused past its lease cannot overwrite the
// next owner's record), results returned byte-identical, results that
// expire, a call recorded with each claim (an id known for another call is a
// Mismatch, never its result), and attempts counted across owners. The batch
// forms are held to the same, item by item: mixed outcomes in one batch, an
// item's error its own, an id twice in a batch claimed once (by its first
// occurrence), a mismatch and a lapsed claim reclaimed inside a batch, a
// batch larger than the store's own limit (split, not failed), results byte
// for byte, and a batch whose context ends answering only what is durable.
// Under Run,
// leases and time-to-lives are tens of milliseconds, so a store must honour
// millisecond durations.
package storetest
