package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/examples/support-agent/tools"
)

// TestMainJobExecutesEachEffectOnce runs the example service twice on one
// state directory: the first run executes the refund and the email once and
// answers the replay from the store; the second process executes nothing.
func TestMainJobExecutesEachEffectOnce(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "") // the default: the scripted endpoint
	state := t.TempDir()
	manifests := filepath.Join("..", "..", "manifests")
	runOnce := func() string {
		var out, errOut strings.Builder
		if code := run(context.Background(), []string{"-manifests", manifests, "-state", state}, &out, &errOut); code != 0 {
			t.Fatalf("run exited %d: %s\n%s", code, errOut.String(), out.String())
		}
		return out.String()
	}

	first := runOnce()
	for _, want := range []string{
		`- "limit": expected integer, got "ten"`,
		`tool "refund_order" has side effects and never runs inline`,
		"the replay staged 2 intents, byte-identical to the first run's",
		"payment provider applied 1 refund(s); mail relay sent 1 email(s) in this process",
		"served as Chat Completions responses by a local in-process endpoint, through openai-go",
		`"tool_call_id":"call_3_1","role":"tool"}`,
	} {
		if !strings.Contains(first, want) {
			t.Errorf("first run's trace lacks %q:\n%s", want, first)
		}
	}
	executed := regexp.MustCompile(`(?m)^\S+ (refund_order|send_email)\s+OK .*\(executed now\)$`)
	if n := len(executed.FindAllString(first, -1)); n != 2 {
		t.Errorf("first run executed %d intents, want 2 (one refund, one email):\n%s", n, first)
	}

	second := runOnce()
	if n := len(executed.FindAllString(second, -1)); n != 0 {
		t.Errorf("second run executed %d intents, want 0: the store must remember them:\n%s", n, second)
	}
	if !strings.Contains(second, "payment provider applied 0 refund(s)") {
		t.Errorf("second run's trace:\n%s", second)
	}
}

func TestMainJobRefusesAMissingManifestDir(t *testing.T) {
	var out, errOut strings.Builder
	code := run(context.Background(), []string{"-manifests", filepath.Join(t.TempDir(), "nope"), "-state", t.TempDir()}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "run from the repository root or pass -manifests") {
		t.Errorf("code %d, stderr %q", code, errOut.String())
	}
}

// The manifest's minLength lets a query of blanks through to the function.
func TestSearchKBWithABlankQueryFindsNothing(t *testing.T) {
	got, err := newBackend().searchKB(context.Background(), tools.SearchKBArgs{Query: "  ", TopK: 3})
	if err != nil || got.Articles == nil || len(got.Articles) != 0 {
		t.Errorf("searchKB(blank query) = %v, %v; want an empty list of articles (not null: returns requires it) and no error", got, err)
	}
}
