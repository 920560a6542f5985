package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/internal/diag/sariftest"
)

// TestExitStatus runs the built command over effectcheck's test programs: a
// program with an inline call of an effect function exits 1 and prints the
// finding; one without exits 0; a package that does not load exits 2.
func TestExitStatus(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "effectcheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	gopath, err := filepath.Abs(filepath.Join("..", "..", "effectcheck", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		status int
		stdout string
		stderr string
	}{
		{[]string{"app", "billing"}, 1, "billing.go:13:2: a call of Charge, bound as side-effecting tool \"charge\"", ""},
		{[]string{"-test", "app", "billing"}, 1, "main_test.go:12:10: a call of Charge", ""},
		{[]string{"github.com/beam-agents/toolreg/effector"}, 0, "", ""},
		{[]string{"no/such/package"}, 2, "", "cannot check packages that do not load"},
		{[]string{"-format", "github", "app", "billing"}, 1, "billing.go,line=13,col=2,title=effectcheck%3A inline-effect::a call of Charge, bound as side-effecting tool \"charge\"", ""},
		{[]string{"-format", "jsonl", "app", "billing"}, 1, `"rule":"inline-effect","file":"`, ""},
		{[]string{"-format", "sarif", "app", "billing"}, 1, `"ruleId": "inline-effect"`, ""},
		{[]string{"-format", "sarif", "github.com/beam-agents/toolreg/effector"}, 0, `"results": []`, ""},
		{[]string{"-format", "xml", "app"}, 2, "", `unknown format "xml"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Dir = filepath.Join(gopath, "src")
			cmd.Env = append(os.Environ(), "GOPATH="+gopath, "GO111MODULE=off", "GOWORK=off", "GOFLAGS=")
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			status := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != tc.status {
				t.Errorf("exit status %d, want %d\nstdout: %s\nstderr: %s", status, tc.status, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.stdout) {
				t.Errorf("stdout %q does not contain %q", stdout.String(), tc.stdout)
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tc.stderr)
			}
			if slices.Contains(tc.args, "sarif") {
				if err := sariftest.Validate([]byte(stdout.String())); err != nil {
					t.Error(err)
				}
			}
			if tc.status == 0 && stdout.Len() > 0 && !slices.Contains(tc.args, "sarif") {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}
