// Package cputime measures the processor time this process uses, for
// benchmarks: on a machine shared with other work, ns/op counts the time a
// benchmark waited for a processor too, and the processor time it used
// compares two paths more steadily.
package cputime

import (
	"testing"
)

// Report starts measuring the process's processor time and returns the
// function that reports it per operation, as cpu-ns/op.
func Report(b *testing.B) (done func()) {
	start := Process()
	return func() {
		b.ReportMetric(float64(Process()-start)/float64(b.N), "cpu-ns/op")
	}
}
