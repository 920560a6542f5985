package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writes from many goroutines all land, each whole, while String reads.
func TestBufferIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("line\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.String(), "line\n"); got != 800 || len(b.String()) != 800*len("line\n") {
		t.Fatalf("%d whole lines of %d bytes, want 800", got, len(b.String()))
	}
}
