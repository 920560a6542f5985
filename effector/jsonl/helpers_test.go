package jsonl_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"sync"
	"testing"

	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/intent"
)

// serveLine is an intent's JSONL line.
func serveLine(t *testing.T, in *intent.Intent) string {
	t.Helper()
	b, err := in.MarshalJSON()
	if err != nil {
		t.Fatalf("Intent.MarshalJSON: %v", err)
	}
	return string(b) + "\n"
}

func serveStore(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("sqlitestore.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// serveResults reads a JSONL results file into results by intent id.
func serveResults(t *testing.T, path string) map[string][]intent.Result {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]intent.Result{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r intent.Result
		if err := r.UnmarshalJSON(sc.Bytes()); err != nil {
			t.Fatalf("results line %q: %v", sc.Text(), err)
		}
		out[r.IntentID] = append(out[r.IntentID], r)
	}
	return out
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
