// Package storetest is the conformance suite every effector.DedupStore must
// pass. A store's own test calls Run with a constructor:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) effector.DedupStore {
//			return newStoreForTest(t) // a fresh, empty store; t.Cleanup closes it
//		})
//	}
//
// Run's subtests describe the contract the effector relies on for
// execute-once: one owner at a time, a lease that ends, completion only by the
// current owner (so a worker that paused past its lease cannot overwrite the
// next owner's record), results returned byte-identical, and results that
// expire. Leases and time-to-lives in the suite are tens of milliseconds, so
// a store must honour millisecond durations and measure them with the real
// clock.
package storetest
