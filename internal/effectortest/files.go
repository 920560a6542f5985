package effectortest

import (
	"bufio"
	"bytes"
	"os"
	"testing"

	"github.com/beam-agents/toolreg/intent"
)

// Line is in's JSONL line, newline included.
func Line(t testing.TB, in *intent.Intent) string {
	t.Helper()
	b, err := in.MarshalJSON()
	if err != nil {
		t.Fatalf("Intent.MarshalJSON: %v", err)
	}
	return string(b) + "\n"
}

// Results reads a JSONL results file into results by intent id, failing t
// on a line that is no result.
func Results(t testing.TB, path string) map[string][]intent.Result {
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

// WriteFile writes text to path, failing t if it cannot.
func WriteFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// AppendFile opens path for appending, creating it, until the test ends.
func AppendFile(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
