package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/examples/support-agent/tools"
	"github.com/beam-agents/toolreg/internal/cli"
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
		"the replay staged 4 intents, byte-identical to the first run's",
		"payment provider applied 2 refund(s); mail relay sent 1 email(s) in this process",
		"→ approved by supervisor\n",
		"→ denied by supervisor: a goodwill credit above 100 is not our policy",
		"the effector carried out 2 decision(s)",
		"decisions carried out again: 0 (each approved call ran once)",
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
	// The approved refund runs once, under its execution id; the denied one
	// is answered REJECTED with the note.
	carried := regexp.MustCompile(`(?m)^\S+ (OK|REJECTED) .*\(the decision, carried out\)$`)
	if got := carried.FindAllStringSubmatch(first, -1); len(got) != 2 || got[0][1] == got[1][1] {
		t.Errorf("first run carried out %v, want one OK (approved) and one REJECTED (denied):\n%s", got, first)
	}

	// The README shows `toolreg intents stats` of the store after one run.
	var stats, statsErr strings.Builder
	if code := cli.Main([]string{"intents", "stats", filepath.Join(state, "effects.db")}, &stats, &statsErr); code != 0 {
		t.Fatalf("toolreg intents stats exited %d: %s", code, statsErr.String())
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "$ toolreg intents stats .state/support-agent/effects.db\n" + stats.String() + "```"; !strings.Contains(string(readme), want) {
		t.Errorf("the README's toolreg intents stats after the support-agent is not what it prints now:\n%s", stats.String())
	}

	second := runOnce()
	if n := len(executed.FindAllString(second, -1)); n != 0 {
		t.Errorf("second run executed %d intents, want 0: the store must remember them:\n%s", n, second)
	}
	if carried.MatchString(second) || !strings.Contains(second, "no approval waits") || !strings.Contains(second, "already approved: the stored request, not asked again") {
		t.Errorf("second run decided or carried out an approval again:\n%s", second)
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
