package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/output.txt")

// TestTheStory runs the example as `go run ./examples/remote-agent` does and
// holds its output to testdata/output.txt: the pin finds nothing to change,
// the five tools bind, the remote read runs inline and the remote effect
// once through the effector (a second store's replay answered by the
// tracker's idempotency), the next release is refused at startup with each
// drift, and the re-pin's diff calls the description a safety change.
func TestTheStory(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, "."); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	golden := filepath.Join("testdata", "output.txt")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
