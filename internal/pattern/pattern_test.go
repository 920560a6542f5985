package pattern

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// accepted is the corpus of portable patterns: each must pass Check, compile
// in node with the u flag, and match exactly the probes Go's regexp matches.
var accepted = []string{
	``,
	`^[a-zA-Z0-9_-]{1,64}$`,
	`^cus_[a-z0-9]{6}$`,
	`^ord_\d{4}_\d{6}$`,
	`^\w+@\w+\.[a-z]{2,}$`,
	`^[^\n]+$`,
	`^(?:a|bc)*$`,
	`^(ab)+?c??$`,
	`\bword\b`,
	`^\+?[0-9]{7,15}$`,
	`^[\w.-]+$`,
	`^[\-a]$`,
	`^[-a]$`,
	`^[a-]$`,
	`^[\]\[]$`,
	`^\x41\x7e$`,
	`^[\t\n\f\r ]*$`,
	`^[^\t\n\f\r ]+$`,
	`^\/path\/\{id\}$`,
	`^\(\)\*\+\?\.\^\$\|\\$`,
	`^é+$`,
	`^[é-ü]$`,
	`^😀{2}$`,
	`^\D\W$`,
	`^[a-c-e]$`,
	`^[\d-]$`,
	`a{2,}`,
	`^\v$`,
	`^(a|)$`,
	`\Bx`,
}

// refused pairs a pattern with the construct its error must name.
var refused = []struct{ pattern, construct, portable string }{
	{`(?i)abc`, "(?i)", "[Aa]"},
	{`(?P<id>\d+)`, "(?P<id>", "(...)"},
	{`(?<id>\d+)`, "(?<id>", "(...)"},
	{`\Aabc`, `\A`, "^"},
	{`^ab\z`, `\z`, "$"},
	{`\pL+`, `\pL`, "explicit class"},
	{`\p{Greek}`, `\p{Greek}`, "explicit class"},
	{`[[:alpha:]]+`, "[:alpha:]", "[A-Za-z]"},
	{`^a.c$`, ".", `[^\n]`},
	{`^\s+$`, `\s`, `[\t\n\f\r ]`},
	{`^\S+$`, `\S`, `[^\t\n\f\r ]`},
	{`\x{41}`, `\x{4`, `\xhh`},
	{`a{,3}`, "{", `\{`},
	{`a}`, "}", `\}`},
	{`a]`, "]", `\]`},
	{`[]a]`, "]", `\]`},
	{`^*a`, "*", "quantify"},
	{`\b+`, "+", "quantify"},
	{`\Qa.b\E`, `\Q`, "character itself"},
	{`a\-b`, `\-`, "unescaped"},
	{`[a\b]`, `[a\b]`, "fix"},
	{`[\d-z]`, `\d`, "apart"},
	{`[a-\w]`, `[a-\w]`, "fix"},
	{`[a[b]`, "[", `\[`},
	{`\0`, `\0`, "character itself"},
	{`\cA`, `\cA`, "fix"},
	{`(?s).`, "(?s)", "flags"},
	{`[a-`, "[a-", "fix"},
	{`(?=a)`, "(?=a)", "fix"},
	{`(?<!a)b`, "(?<!a)b", "fix"},
	{`a**`, "a**", "fix"},
	{`x{1001}`, "x{1001}", "fix"},
}

func TestCheckRefusesWhatEnginesReadDifferently(t *testing.T) {
	t.Parallel()
	for _, tc := range refused {
		t.Run(tc.pattern+" is refused naming "+tc.construct, func(t *testing.T) {
			t.Parallel()
			err := Check(tc.pattern)
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Check(%q) = %v, want an *Error", tc.pattern, err)
			}
			if !strings.Contains(pe.Construct, tc.construct) || !strings.Contains(err.Error(), tc.portable) {
				t.Errorf("Check(%q) = %v (construct %q), want it to name %q and say %q", tc.pattern, err, pe.Construct, tc.construct, tc.portable)
			}
		})
	}
}

func TestCheckAcceptsTheCommonCore(t *testing.T) {
	t.Parallel()
	for _, p := range accepted {
		if err := Check(p); err != nil {
			t.Errorf("Check(%q) = %v, want nil", p, err)
		}
	}
}

// probes are the strings every accepted pattern is tried on, in Go and in
// node: the characters where RE2 and ECMA-262 part (\r, \v, U+2028, NBSP,
// astral characters) among ordinary ones.
var probes = []string{
	"", "a", "abc", "ABC", "ab", "bc", "abcabc", "x", "aa", "aaa", "-", "]", "[", "a-", "é", "ü", "ö", "😀😀", "😀",
	"\n", "\r", "\v", "\f", "\t", " ", "\u00a0", "\u2028", "\ufeff", "a\rb", "a\nb", "a\rc", "a\u2028c", "abc\n",
	"cus_8f3k2p", "ord_2024_000123", "joe@example.com", "+15551234567", "word", "a word here", "swordfish",
	"A~", "/path/{id}", `()*+?.^$|\`, "a.b-c_d", "1a", "a1", "_", "xx", "d", "e",
}

// TestAcceptedPatternsMeanTheSameInECMAScript compiles every accepted
// pattern with node's new RegExp(p, "u"), the ECMA-262 engine JSON Schema
// consumers use, and wants the same answer as Go's regexp on every probe.
// It needs node (Debian package nodejs, which .ci/run installs), and fails
// without it.
func TestAcceptedPatternsMeanTheSameInECMAScript(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to check patterns against ECMA-262 (apt-get install nodejs): %v", err)
	}
	input, _ := json.Marshal(map[string]any{"patterns": accepted, "probes": probes})
	const script = `
const fs = require("fs");
const {patterns, probes} = JSON.parse(fs.readFileSync(0, "utf8"));
const out = patterns.map(p => {
	try {
		const re = new RegExp(p, "u");
		return {matches: probes.map(s => re.test(s))};
	} catch (e) {
		return {error: String(e)};
	}
});
process.stdout.write(JSON.stringify(out));
`
	cmd := exec.Command(node, "-e", script)
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var results []struct {
		Matches []bool
		Error   string
	}
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("node's answer: %v\n%s", err, out)
	}
	if len(results) != len(accepted) {
		t.Fatalf("node answered for %d patterns, want %d", len(results), len(accepted))
	}
	for i, p := range accepted {
		r := results[i]
		if r.Error != "" {
			t.Errorf("pattern %q: ECMA-262 refuses it: %s", p, r.Error)
			continue
		}
		re := regexp.MustCompile(p)
		for j, s := range probes {
			if got := re.MatchString(s); got != r.Matches[j] {
				t.Errorf("pattern %q on %q: Go says %v, ECMA-262 says %v", p, s, got, r.Matches[j])
			}
		}
	}
}

// TestRefusedPatternsDifferOrFailInECMAScript shows the refusals are not
// arbitrary: each refused pattern that RE2 compiles is either an error in
// ECMA-262 or matches some probe differently there (named groups and flags
// aside, which are refused for their spelling).
func TestRefusedPatternsDifferOrFailInECMAScript(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed (apt-get install nodejs): %v", err)
	}
	var ps []string
	for _, tc := range refused {
		if _, err := regexp.Compile(tc.pattern); err == nil {
			ps = append(ps, tc.pattern)
		}
	}
	input, _ := json.Marshal(map[string]any{"patterns": ps, "probes": probes})
	const script = `
const {patterns, probes} = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(patterns.map(p => {
	try { const re = new RegExp(p, "u"); return {matches: probes.map(s => re.test(s))}; }
	catch (e) { return {error: String(e)}; }
})));
`
	cmd := exec.Command(node, "-e", script)
	cmd.Stdin = bytes.NewReader(input)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var results []struct {
		Matches []bool
		Error   string
	}
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatal(err)
	}
	// Refused for their spelling, which a newer ECMA-262 mode (v) or a
	// longer form (\01) reads differently.
	spelling := map[string]bool{`(?<id>\d+)`: true, `[a[b]`: true, `\0`: true}
	for i, p := range ps {
		if results[i].Error != "" || spelling[p] {
			continue
		}
		re := regexp.MustCompile(p)
		differs := false
		for j, s := range probes {
			differs = differs || re.MatchString(s) != results[i].Matches[j]
		}
		if !differs {
			t.Errorf("pattern %q: refused, but ECMA-262 compiles it and agrees with RE2 on every probe: add the probe that tells them apart", p)
		}
	}
}

func FuzzCheck(f *testing.F) {
	for _, p := range accepted {
		f.Add(p)
	}
	for _, tc := range refused {
		f.Add(tc.pattern)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := Check(p)
		if err == nil {
			if _, cerr := regexp.Compile(p); cerr != nil {
				t.Fatalf("Check accepted %q, which RE2 refuses: %v", p, cerr)
			}
			return
		}
		var pe *Error
		if !errors.As(err, &pe) || pe.Offset < 0 || pe.Offset > len(p) {
			t.Fatalf("Check(%q) = %#v", p, err)
		}
	})
}

// Check remembers valid patterns only: an invalid one is refused every time,
// and a valid one checked before is still valid.
func TestCheckRemembersValidPatternsOnly(t *testing.T) {
	t.Parallel()
	for range 3 {
		if err := Check(`^remembered_[a-z]{2,9}$`); err != nil {
			t.Fatalf("a valid pattern: %v", err)
		}
		if err := Check(`^(?<name>x)$`); err == nil {
			t.Fatal("a pattern that means another thing in ECMA-262 was accepted after being checked before")
		}
		if err := Check(`^(unclosed$`); err == nil {
			t.Fatal("an invalid pattern was accepted after being checked before")
		}
	}
	if _, ok := valid.Load(`^(unclosed$`); ok {
		t.Error("an invalid pattern is remembered as valid")
	}
	if _, ok := valid.Load(`^remembered_[a-z]{2,9}$`); !ok {
		t.Error("a valid pattern is not remembered")
	}
}
