//go:build unix

package runner_test

import (
	"syscall"
	"testing"
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

// reportCPU starts measuring the process's CPU time and returns the function
// that reports it per operation as cpu-ns/op: on a machine shared with other
// work it compares two paths more steadily than ns/op, which counts the time
// the benchmark waited for a CPU too.
func reportCPU(b *testing.B) (done func()) {
	start := processCPU()
	return func() {
		b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
	}
}
