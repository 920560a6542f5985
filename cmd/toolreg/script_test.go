package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/beam-agents/toolreg/internal/cli"
	"github.com/beam-agents/toolreg/internal/diag/sariftest"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/script/*.txtar with what the command prints")

// TestMain lets the test binary run as the toolreg command, so the scripts
// exec the real command (cli.Main) with no separate build.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"toolreg":   func() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) },
		"effwriter": effWriter, // intents_writer_test.go
		"mcpshop":   mcpShop,   // mcpshop_test.go
	})
}

// TestScript runs testdata/script/*.txtar. In them $REPO is the module root,
// for scripts that check the repository's own manifests, and $CUE the real
// cue command pinned in go.mod (go tool cue), for scripts that check that cue
// vet agrees.
func TestScript(t *testing.T) {
	t.Parallel()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "tool", "-n", "cue")
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool -n cue: %v", err)
	}
	cue := strings.TrimSpace(string(out))
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// sarifvalid file: file (stdout for the last command's) meets
			// the published SARIF 2.1.0 schema.
			"sarifvalid": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: sarifvalid file")
				}
				err := sariftest.Validate([]byte(ts.ReadFile(args[0])))
				if neg {
					if err == nil {
						ts.Fatalf("%s meets the SARIF 2.1.0 schema", args[0])
					}
					return
				}
				ts.Check(err)
			},
		},
		Setup: func(e *testscript.Env) error {
			e.Setenv("REPO", repo)
			e.Setenv("CUE", cue)
			e.Setenv("XDG_CACHE_HOME", filepath.Join(e.WorkDir, ".cache"))
			return nil
		},
	})
}
