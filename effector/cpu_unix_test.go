//go:build unix

package effector_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used, in user and kernel
// mode, on every thread: the garbage collector's work included.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
