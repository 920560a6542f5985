package toolreg_test

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEProcessSnippetIsExample keeps the README's handling of
// Process's outcomes compiled and run: every line of its switch, from `var
// refused` to the switch's closing brace, is a line of
// effector.ExampleEffector_Process_outcomes, in the same order (the example
// adds a line printing each case, which its Output checks).
func TestREADMEProcessSnippetIsExample(t *testing.T) {
	t.Parallel()
	body := readmeBlock(t, "## The side-effect flag is the whole design", "```go")
	_, snippet, ok := strings.Cut(body, "\nvar refused *effector.RefusedError\n")
	if !ok {
		t.Fatal("the README's Go block has no `var refused *effector.RefusedError`: the handling of Process's outcomes is gone")
	}
	snippet, _, ok = strings.Cut("var refused *effector.RefusedError\n"+snippet+"\n", "\n}\n")
	if !ok {
		t.Fatal("the README's switch on Process's outcomes is not closed")
	}
	snippet += "\n}"
	src, err := os.ReadFile("effector/example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, example, ok := strings.Cut(string(src), "\nfunc ExampleEffector_Process_outcomes() {\n")
	if !ok {
		t.Fatal("effector/example_test.go has no ExampleEffector_Process_outcomes")
	}
	example, _, _ = strings.Cut(example, "\n}\n")
	lines := strings.Split(example, "\n")
	at := 0
	for _, want := range strings.Split(snippet, "\n") {
		want = strings.TrimSpace(want)
		for at < len(lines) && strings.TrimSpace(lines[at]) != want {
			at++
		}
		if at == len(lines) {
			t.Fatalf("the README's line %q is not in ExampleEffector_Process_outcomes (after the lines before it): make the two the same code", want)
		}
		at++
	}
}
