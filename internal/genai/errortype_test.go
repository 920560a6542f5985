package genai

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"testing"

	"github.com/beam-agents/toolreg"
)

// TestEveryErrorTypeIsDocumentedOnce: the values are distinct, and the
// README's Telemetry table, which users read, lists each of them and no
// other, so the documented set cannot drift from the one the code sets.
func TestEveryErrorTypeIsDocumentedOnce(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile("(?s)\n## Telemetry\n(.*?)\n## ").FindSubmatch(readme)
	if section == nil {
		t.Fatal("the README has no Telemetry section")
	}
	documented := map[string]bool{}
	for _, row := range regexp.MustCompile("(?m)^\\| (`[^|]+`) \\|").FindAllSubmatch(section[1], -1) {
		for _, v := range regexp.MustCompile("`([^`]+)`").FindAllSubmatch(row[1], -1) {
			documented[string(v[1])] = true
		}
	}
	seen := map[string]bool{}
	for _, v := range ErrorTypes {
		if seen[v] {
			t.Errorf("%q is listed twice", v)
		}
		seen[v] = true
		if !documented[v] {
			t.Errorf("error.type %q is not in the README's table", v)
		}
	}
	for v := range documented {
		if !seen[v] {
			t.Errorf("the README's table documents %q, which nothing sets", v)
		}
	}
}

func TestErrorTypeOfNamesToolregsKindsAndNothingElse(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("runner: calling it: %w", err) }
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("upstream said no"), ""},
		{&toolreg.ToolArgumentError{Tool: "t"}, ErrorArgumentRefused},
		{wrap(&toolreg.ArgumentsTooLargeError{Tool: "t"}), ErrorArgumentsTooLarge},
		{&toolreg.SideEffectToolError{Name: "t"}, ErrorSideEffectRefused},
		{wrap(toolreg.ErrNotBound), ErrorNotBound},
		{&toolreg.ToolPanicError{Tool: "t"}, ErrorToolPanic},
		{&toolreg.ToolResultError{Tool: "t"}, ErrorResultRefused},
		{wrap(context.DeadlineExceeded), ErrorTimeout},
		{context.Canceled, ErrorCanceled},
	} {
		if got := ErrorTypeOf(c.err); got != c.want {
			t.Errorf("ErrorTypeOf(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
