// Package syncbuf is a bytes.Buffer safe for concurrent use: the log or
// output a test reads while the code under test writes it from other
// goroutines.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer collects what is written to it; Write and String may be called from
// any goroutine. The zero value is ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
