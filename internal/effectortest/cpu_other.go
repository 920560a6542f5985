//go:build !unix

package effectortest

import "time"

// processCPU is 0 where getrusage is not available: cpu-µs/intent reads 0.
func processCPU() time.Duration { return 0 }
