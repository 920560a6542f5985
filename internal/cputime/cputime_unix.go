//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Process is the processor time this process has used so far, user and
// system, on every thread: the garbage collector's work included.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
