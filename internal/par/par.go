// Package par runs the independent per-tool work of startup on every core.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Do calls fn(0) to fn(n-1), spread over GOMAXPROCS goroutines, and returns
// when all have returned. fn must be safe to call concurrently for different
// i; to fail as the same work done in order would, it records its result at
// i and the caller reads them in order (see First).
func Do(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
}

// First returns the first non-nil error of errs, in order.
func First(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
