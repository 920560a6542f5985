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

func TestJSONLinesDecodesEachLineAndNamesABadOne(t *testing.T) {
	var b Buffer
	b.Write([]byte(`{"msg":"a","n":1}` + "\n" + `{"msg":"b"}` + "\n"))
	lines, err := b.JSONLines()
	if err != nil || len(lines) != 2 || lines[0]["msg"] != "a" || lines[0]["n"] != float64(1) || lines[1]["msg"] != "b" {
		t.Fatalf("JSONLines = %v, %v; want the two objects", lines, err)
	}
	b.Write([]byte("not json\n"))
	if _, err := b.JSONLines(); err == nil || !strings.Contains(err.Error(), `"not json"`) {
		t.Fatalf("JSONLines over a line that is no JSON = %v; want an error naming it", err)
	}
}
