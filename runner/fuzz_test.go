package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/runner"
)

// FuzzRun feeds arbitrary bytes as the arguments of the four-param search tool.
// Run must never panic; it must invoke the function exactly when the tool's
// own verdict (Tool.CheckArgs) accepts the arguments, with the values that
// verdict normalized them to; and what reaches the function must satisfy the
// manifest's constraints.
func FuzzRun(f *testing.F) {
	for _, s := range []string{
		`{"query":"socks","limit":3,"exact":true,"tags":["wool"]}`,
		`{"query":"socks","exact":false,"tags":[]}`,
		`{"query":"socks","limit":"7","exact":"yes","tags":["a","b"]}`,
		`{"query":"socks","limit":7.0,"exact":0,"tags":null}`,
		`{"query":"","exact":true,"tags":[]}`,
		`{"query":"q","limit":101,"exact":true,"tags":[]}`,
		`{"query":"q","limit":1e400,"exact":true,"tags":[]}`,
		`{"query":"q","limit":-0,"exact":true,"tags":[1]}`,
		`{"query":"q","exact":true,"tags":["1","2","3","4","5","6"]}`,
		`{"query":"q","exact":true,"tags":[],"x":1}`,
		`{"query":"q","query":"r","exact":true,"tags":[]}`,
		`[1,2]`, `null`, ``, `{`, `"\ud800"`, `{"query":"\u0000","exact":"off","tags":[]}`,
	} {
		f.Add([]byte(s))
	}
	// Bound once: the fuzz function runs its inputs one at a time.
	var got *SearchArgs
	search, _, _ := fixture(f, func(_ context.Context, a SearchArgs) (SearchResult, error) {
		got = &a
		return SearchResult{Query: a.Query, Hits: a.Limit}, nil
	})
	f.Fuzz(func(t *testing.T, args []byte) {
		got = nil
		norm, verdict := search.CheckArgs(args)
		res, err := runner.New().Run(context.Background(), search, args)

		if verdict != nil {
			if got != nil {
				t.Fatalf("CheckArgs refused %q (%v) but the function got %+v", args, verdict, *got)
			}
			var ae *toolreg.ToolArgumentError
			if !errors.As(err, &ae) {
				t.Fatalf("Run(%q) error = %v, want a *toolreg.ToolArgumentError like CheckArgs's %v", args, err, verdict)
			}
			return
		}
		if err != nil {
			t.Fatalf("CheckArgs accepted %q as %s but Run failed: %v", args, norm, err)
		}
		if got == nil {
			t.Fatalf("Run(%q) succeeded without invoking the function", args)
		}
		var want SearchArgs
		if err := json.Unmarshal(norm, &want); err != nil {
			t.Fatalf("CheckArgs' normalized %s does not decode: %v", norm, err)
		}
		if diff := cmp.Diff(want, *got); diff != "" {
			t.Fatalf("the function got other values than CheckArgs normalized %q to (-want +got):\n%s", args, diff)
		}
		// The manifest's constraints hold for whatever reached the function.
		if utf8.RuneCountInString(got.Query) < 1 || got.Limit < 1 || got.Limit > 100 || len(got.Tags) > 5 {
			t.Fatalf("arguments breaking the contract reached the function: %+v", *got)
		}
		if res != (SearchResult{Query: got.Query, Hits: got.Limit}) {
			t.Fatalf("Run() result = %v, want the function's", res)
		}
	})
}
