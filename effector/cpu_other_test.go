//go:build !unix

package effector_test

import "time"

// processCPU is not measured here; the cpu-ns/op metric then reads 0.
func processCPU() time.Duration { return 0 }
