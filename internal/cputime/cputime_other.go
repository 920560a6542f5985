//go:build !unix

package cputime

import "time"

// Process is 0 where getrusage is not available: the metrics read 0.
func Process() time.Duration { return 0 }
