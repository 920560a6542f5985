//go:build unix

package cputime

import (
	"testing"
	"time"
)

// Work on this goroutine shows in Process.
func TestProcessCountsWork(t *testing.T) {
	start := Process()
	deadline := time.Now().Add(50 * time.Millisecond)
	n := 0
	for time.Now().Before(deadline) {
		n++
	}
	if got := Process() - start; got < 10*time.Millisecond {
		t.Fatalf("50ms of busy work (%d rounds) counted %v of processor time", n, got)
	}
}
