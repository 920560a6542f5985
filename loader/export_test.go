package loader

import "time"

// SetCUETimeout sets the limit on evaluating one CUE package, for a test, and
// returns a function that restores it.
func SetCUETimeout(d time.Duration) (restore func()) {
	old := cueTimeout
	cueTimeout = d
	return func() { cueTimeout = old }
}
