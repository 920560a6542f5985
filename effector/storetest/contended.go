package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
)

// ClaimContended has perStore goroutines on each of stores (handles on one
// shared backend: connections to one database file, clients of one server)
// claim the same intents at once, and fails t unless each of the intents was
// claimed exactly once across all of them. Run gives one store; this is the
// check that the store's claim is atomic across handles too.
func ClaimContended(t *testing.T, intents, perStore int, stores ...effector.DedupStore) {
	t.Helper()
	claimed := make([]atomic.Int32, intents)
	var wg sync.WaitGroup
	errs := make(chan error, len(stores)*perStore)
	start := make(chan struct{})
	for _, s := range stores {
		for range perStore {
			wg.Go(func() {
				<-start
				for i := range intents {
					c, err := s.Claim(context.Background(), fmt.Sprintf("contended-%d", i), callA, time.Minute)
					if err != nil {
						errs <- err
						return
					}
					if c.State == effector.Claimed {
						claimed[i].Add(1)
					}
				}
			})
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Claim: %v", err)
	}
	for i := range intents {
		if n := claimed[i].Load(); n != 1 {
			t.Errorf("intent contended-%d was claimed %d times, want exactly 1", i, n)
		}
	}
}
