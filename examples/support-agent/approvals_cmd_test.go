package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/internal/cli"
)

// printedCommand is a command line the trace prints for a person to run:
// the toolreg CLI from the repository's root.
var printedCommand = regexp.MustCompile(`(?m)^\s+\$ go run \./cmd/toolreg (.*)$`)

// shellWords splits a line as a POSIX shell does the words the trace
// writes: plain words, and single-quoted ones (a quote inside one closes
// it, is escaped with a backslash, and opens it again).
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			w.WriteByte(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
			w.WriteByte('\'')
			i, inWord = i+1, true
		case c == ' ':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case strings.IndexByte(`"\$`+"`", c) >= 0:
			t.Fatalf("the printed line %q has %q outside single quotes: a shell would read it otherwise", line, c)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("the printed line %q leaves a quote open", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// runPrintedApprovals takes each approval command the trace printed and
// runs it through toolreg's CLI as a shell would pass it: it must find the
// store and the approval it names. The supervisor decided each already, so
// the command is told its decision was ignored, who decided, and fails; its
// show counterpart prints the approval.
func runPrintedApprovals(t *testing.T, trace string) {
	t.Helper()
	lines := printedCommand.FindAllStringSubmatch(trace, -1)
	if len(lines) != 2 {
		t.Fatalf("the trace prints %d toolreg commands, want one per approval (2):\n%s", len(lines), trace)
	}
	for _, m := range lines {
		args := shellWords(t, m[1])
		if len(args) < 4 || args[0] != "approvals" || (args[1] != "approve" && args[1] != "deny") {
			t.Fatalf("printed %q, want toolreg approvals approve|deny ... STORE ID", m[1])
		}
		id := args[len(args)-1]
		var stdout, stderr bytes.Buffer
		code := cli.Main(args, &stdout, &stderr)
		verdict := map[string]string{"approve": "approved", "deny": "denied"}[args[1]]
		if want := "ignored: approval " + id + " (refund_over_limit) was already " + verdict + " by supervisor at "; code != 1 || !strings.Contains(stderr.String(), want) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", m[1], code, stderr.String(), want)
		}
		stdout.Reset()
		show := append([]string{"approvals", "show"}, args[len(args)-2:]...)
		if code := cli.Main(show, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), `"approval_id": "`+id+`"`) {
			t.Errorf("%q: exit %d, stdout %q", show, code, stdout.String())
		}
	}
}

// The commands the trace prints for the supervisor's decisions run as
// printed (the trace once printed `... effects.db (SQLite) ID`, which no
// shell runs).
func TestThePrintedApprovalCommandsRunAsPrinted(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	var out, errOut strings.Builder
	if code := run(context.Background(), []string{"-manifests", manifestsDir, "-state", t.TempDir()}, &out, &errOut); code != 0 {
		t.Fatalf("run exited %d: %s", code, errOut.String())
	}
	runPrintedApprovals(t, out.String())
}
