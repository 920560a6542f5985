package cli

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The scripts in cmd/toolreg/testdata/script test what the commands print;
// this test pins the exit statuses, which testscript's '! exec' cannot tell
// apart.
func TestMainExitStatus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good/lookup.yaml", "name: lookup_customer\ndescription: Look up a customer.\nparams:\n  customer_id:\n    type: string\n")
	bad := write("bad/refund.yaml", "name: refund\ndescription: Refund an order.\nparams:\n  amount:\n    tpye: number\n")
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		args       []string
		want       int
		wantStdout string // a substring; "" means stdout must be empty
		wantStderr string // a substring; "" means stderr must be empty
	}{
		{"no arguments is a usage error", nil, 2, "", "toolreg <command>"},
		{"--help prints the commands on stdout", []string{"--help"}, 0, "The commands are", ""},
		{"-h prints the commands on stdout", []string{"-h"}, 0, "The commands are", ""},
		{"help prints the commands on stdout", []string{"help"}, 0, "The commands are", ""},
		{"help vet prints vet's help", []string{"help", "vet"}, 0, "usage: toolreg vet [-config file] [-format format] [-provider form] [-strict] [-v] [paths...]", ""},
		{"help of an unknown command is a usage error", []string{"help", "frob"}, 2, "", `unknown command "frob"`},
		{"an unknown command is a usage error", []string{"frob"}, 2, "", `unknown command "frob"`},
		{"a flag before the command is a usage error", []string{"-v", "vet"}, 2, "", "comes before a command"},
		{"a flag after an argument is a usage error", []string{"search", "lookup", "-n", "1", good}, 2, "", "flag -n comes after an argument, where it is read as one: write flags first"},
		{"a subcommand's flag after its store is a usage error", []string{"intents", "list", filepath.Join(dir, "x.db"), "-json"}, 2, "", `flag -json comes after an argument, where it is read as one: write flags right after "toolreg intents list", before STORE`},
		{"help asked for after an argument is a usage error that says where flags go", []string{"search", "lookup", "--help"}, 2, "", "flag --help comes after an argument"},
		{"vet --help prints vet's help on stdout", []string{"vet", "--help"}, 0, "file:line:col: tool: path: message", ""},
		{"schema -h prints schema's help on stdout", []string{"schema", "-h"}, 0, "usage: toolreg schema [-manifest] [-provider form] [paths...]", ""},
		{"vet with an unknown flag is a usage error", []string{"vet", "-x", good}, 2, "", "flag provided but not defined: -x"},
		{"vet of valid manifests succeeds silently", []string{"vet", good}, 0, "", ""},
		{"vet -v of valid manifests lists them", []string{"vet", "-v", good}, 0, "lookup_customer: ok (read-only, 1 param)", ""},
		{"vet of an invalid manifest reports it", []string{"vet", bad}, 1, "", "refund.yaml:4:3: refund: params.amount: "},
		{"vet of a directory without manifests fails", []string{"vet", empty}, 1, "", "no manifests"},
		{"vet of a missing path fails", []string{"vet", filepath.Join(dir, "nope")}, 1, "", "nope"},
		{"schema of valid manifests prints JSON", []string{"schema", good}, 0, `"name": "lookup_customer"`, ""},
		{"schema of an invalid manifest prints only the findings", []string{"schema", good, bad}, 1, "", "refund.yaml:4:3"},
		{"gen with a -pkg that is no Go identifier is a usage error", []string{"gen", "-pkg", "func", good}, 2, "", `-pkg "func" is not a Go identifier`},
		{"vet -strict without -provider is a usage error", []string{"vet", "-strict", good}, 2, "", "name the provider with -provider"},
		{"diff of a directory without manifests cannot compare", []string{"diff", empty, filepath.Dir(good)}, 2, "", "no manifests"},
		{"intents list with an unknown -state is a usage error", []string{"intents", "list", "-state", "bogus", filepath.Join(dir, "effects.db")}, 2, "", `toolreg intents list: -state "bogus": want in_flight, unknown, done or expired`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			got := Main(tt.args, &stdout, &stderr)
			if got != tt.want {
				t.Errorf("Main(%q) = %d, want %d\nstderr:\n%s", tt.args, got, tt.want, stderr.String())
			}
			check := func(stream, out, want string) {
				if want == "" && out != "" {
					t.Errorf("Main(%q) wrote to %s, want nothing:\n%s", tt.args, stream, out)
				}
				if !strings.Contains(out, want) {
					t.Errorf("Main(%q) %s does not contain %q:\n%s", tt.args, stream, want, out)
				}
			}
			check("stdout", stdout.String(), tt.wantStdout)
			check("stderr", stderr.String(), tt.wantStderr)
		})
	}
}

// A new command must appear in the top-level help and answer --help, so the
// dispatch table stays the one place to add one.
func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	var usage bytes.Buffer
	printUsage(&usage)
	for _, c := range commands {
		if !strings.Contains(usage.String(), "\t"+c.name+" ") {
			t.Errorf("the top-level help does not list %q:\n%s", c.name, usage.String())
		}
		if c.short == "" || c.long == "" {
			t.Errorf("command %q has no short or long help", c.name)
		}
		var stdout, stderr bytes.Buffer
		if got := Main([]string{c.name, "--help"}, &stdout, &stderr); got != 0 || !strings.HasPrefix(stdout.String(), "usage: toolreg "+c.name) {
			t.Errorf("toolreg %s --help = %d with stdout %q, want 0 and its usage", c.name, got, stdout.String())
		}
	}
}

// TestTheCommandListIsAligned: every command's summary starts in one
// column, whatever the longest command's name.
func TestTheCommandListIsAligned(t *testing.T) {
	var stdout bytes.Buffer
	if got := Main([]string{"help"}, &stdout, io.Discard); got != 0 {
		t.Fatalf("help: exit %d", got)
	}
	col := -1
	for _, c := range commands {
		var line string
		for _, l := range strings.Split(stdout.String(), "\n") {
			if strings.HasPrefix(l, "\t"+c.name+" ") {
				line = l
			}
		}
		at := strings.Index(line, c.short)
		if line == "" || at < 0 {
			t.Fatalf("help lists no line for %s:\n%s", c.name, stdout.String())
		}
		if col >= 0 && at != col {
			t.Errorf("%s's summary starts at column %d, the others' at %d:\n%s", c.name, at, col, stdout.String())
		}
		col = at
	}
}

// TestFlagAfterArgs checks which arguments left after the flags are taken
// for misplaced flags: only those naming a flag of the command, and none
// after "--".
func TestFlagAfterArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"refund", "-n", "1"}, "-n"},
		{[]string{"refund", "--n=1"}, "--n=1"},
		{[]string{"-n", "1", "refund", "dir"}, ""},
		{[]string{"refund", "-x"}, ""},                       // no flag of this command: an argument
		{[]string{"refund", "-"}, ""},                        // stdin, say
		{[]string{"--", "refund", "-n"}, ""},                 // "--": what follows is arguments
		{[]string{"refund", "-h"}, "-h"},                     // help is asked for where arguments go
		{[]string{"refund", "--", "-n"}, "-n"},               // "--" as an argument, not the end of the flags
		{[]string{"-tag", "--", "refund", "-n"}, "-n"},       // "--" as a flag's value
		{[]string{"-v", "--", "refund", "-n"}, ""},           // after a boolean flag, "--" ends the flags
		{[]string{"-tag", "-tag", "--", "refund", "-n"}, ""}, // "--" ends the flags after -tag's value "-tag"
		{[]string{"refund", "-help=x"}, ""},                  // no flag of this command
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.Int("n", 10, "")
		fs.String("tag", "", "")
		fs.Bool("v", false, "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := flagAfterArgs(fs, tc.args); got != tc.want {
			t.Errorf("flagAfterArgs after %q = %q, want %q", tc.args, got, tc.want)
		}
	}
}
