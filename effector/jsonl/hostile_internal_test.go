package jsonl

import (
	"bufio"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// pieces reads as a producer writes: each piece, then the end of the file
// (io.EOF) until the next piece is written, as a file source sees a file
// that grows.
type pieces struct {
	mu     sync.Mutex
	pieces []string
	eof    bool
}

func (p *pieces) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.eof || len(p.pieces) == 0 {
		p.eof = false
		return 0, io.EOF
	}
	n := copy(b, p.pieces[0])
	if p.pieces[0] = p.pieces[0][n:]; p.pieces[0] == "" {
		p.pieces = p.pieces[1:]
		p.eof = true
	}
	return n, nil
}

// A line one byte longer than the limit is too long however it was written:
// read whole, or as a fragment without its newline (the producer still
// writing) and then its newline. Cut to the limit, it must not pass for a
// line within it.
func TestAFileLineOneByteTooLongIsTooLongWhenItsNewlineComesLater(t *testing.T) {
	t.Parallel()
	const limit = 64
	// An intent's line of limit bytes, then a space: limit+1 bytes that,
	// cut to the limit, would decode.
	line := `{"intent_id":"x"}` + strings.Repeat(" ", limit-len(`{"intent_id":"x"}`)) + " "
	for _, tc := range []struct {
		name   string
		pieces []string
	}{
		{"whole", []string{line + "\n"}},
		{"its newline later", []string{line, "\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ck, err := loadCheckpoint(filepath.Join(t.TempDir(), "in.ack"))
			if err != nil {
				t.Fatal(err)
			}
			s := newSource("in", limit, ck)
			s.tornWait = time.Hour
			defer s.Close()
			go s.read(bufio.NewReader(&pieces{pieces: tc.pieces}), 0, 0)
			d, err := s.Receive(context.Background())
			if err != nil {
				t.Fatalf("Receive: %v", err)
			}
			if d.Err == nil || !strings.Contains(d.Err.Error(), "longer than 64 bytes") {
				t.Fatalf("delivery of a line of %d bytes = intent %v, error %v; want it refused as longer than %d bytes", len(line), d.Intent != nil, d.Err, limit)
			}
			if _, err := s.Receive(context.Background()); !errors.Is(err, io.EOF) {
				t.Fatalf("Receive after the line: %v, want io.EOF", err)
			}
		})
	}
}
