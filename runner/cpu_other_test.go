//go:build !unix

package runner_test

import (
	"testing"
	"time"
)

// processCPU is not measured here; the cpu-ns/op metric then reads 0.
func processCPU() time.Duration { return 0 }

// reportCPU: see cpu_unix_test.go.
func reportCPU(b *testing.B) (done func()) { return func() {} }
