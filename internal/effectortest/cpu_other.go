//go:build !unix

package effectortest

import "time"

// ProcessCPU is 0 where getrusage is not available: cpu-µs/intent reads 0.
func ProcessCPU() time.Duration { return 0 }
