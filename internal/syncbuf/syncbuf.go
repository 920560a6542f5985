// Package syncbuf is a bytes.Buffer safe for concurrent use: the log or
// output a test reads while the code under test writes it from other
// goroutines.
package syncbuf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
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

// JSONLines decodes what was written so far as one JSON object a line, as
// slog's JSONHandler writes it.
func (s *Buffer) JSONLines() ([]map[string]any, error) {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("log line %q: %w", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out, nil
}
