package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/beam-agents/toolreg/internal/cli"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/script/*.txtar with what the command prints")

// TestMain lets the test binary run as the toolreg command, so the scripts
// exec the real command (cli.Main) with no separate build.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"toolreg": func() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScript runs testdata/script/*.txtar. In them $REPO is the module root,
// for scripts that check the repository's own manifests.
func TestScript(t *testing.T) {
	t.Parallel()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(e *testscript.Env) error {
			e.Setenv("REPO", repo)
			return nil
		},
	})
}
