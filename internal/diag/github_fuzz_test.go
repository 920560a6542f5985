package diag

import (
	"strconv"
	"strings"
	"testing"
)

// unescape undoes the runner's escapes, as the runner reads a command.
var unescape = strings.NewReplacer("%0D", "\r", "%0A", "\n", "%3A", ":", "%2C", ",", "%25", "%")

// parseCommand reads one workflow command line the way the Actions runner
// does: the name up to the first space or "::", properties split at ',' and
// '=', the message after the first "::" that follows them.
func parseCommand(t *testing.T, line string) (cmd string, props map[string]string, msg string) {
	t.Helper()
	rest, ok := strings.CutPrefix(line, "::")
	if !ok {
		t.Fatalf("no leading :: in %q", line)
	}
	head, msg, ok := strings.Cut(rest, "::")
	if !ok {
		t.Fatalf("no :: after the properties in %q", line)
	}
	cmd, propText, _ := strings.Cut(head, " ")
	props = map[string]string{}
	if propText != "" {
		for _, p := range strings.Split(propText, ",") {
			k, v, ok := strings.Cut(p, "=")
			if !ok {
				t.Fatalf("property %q without '=' in %q", p, line)
			}
			props[k] = unescape.Replace(v)
		}
	}
	return cmd, props, unescape.Replace(msg)
}

// FuzzGitHubCommandsReadBack: whatever a diagnostic's file, title and
// message hold, it is one line, and the runner reads back exactly them.
func FuzzGitHubCommandsReadBack(f *testing.F) {
	f.Add("manifests/a.yaml", "refund: params", "type: bad, really\n100%", 3, 4)
	f.Add("a,b:c%0A.yaml", "::error::", "%25\r\n::warning::x", 1, 0)
	f.Fuzz(func(t *testing.T, file, title, msg string, line, col int) {
		if line < 0 || col < 0 {
			return
		}
		d := Diagnostic{Severity: Warning, Rule: "r", File: file, Line: line, Col: col, Title: title, Message: msg}
		var b strings.Builder
		if err := Write(&b, GitHub, Tool{Name: "t", Rules: []Rule{{ID: "r"}}}, []Diagnostic{d}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") || strings.Contains(out, "\r") {
			t.Fatalf("not one line: %q", out)
		}
		cmd, props, gotMsg := parseCommand(t, strings.TrimSuffix(out, "\n"))
		if cmd != "warning" || gotMsg != msg {
			t.Errorf("read back %q %q, want warning %q", cmd, gotMsg, msg)
		}
		if file != "" && props["file"] != file {
			t.Errorf("file read back %q, want %q", props["file"], file)
		}
		if title != "" && props["title"] != title {
			t.Errorf("title read back %q, want %q", props["title"], title)
		}
		if file != "" && line > 0 && props["line"] != strconv.Itoa(line) {
			t.Errorf("line read back %q, want %d", props["line"], line)
		}
	})
}
