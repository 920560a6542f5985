package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/internal/pgtest"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// TestMainJobOnEachStore runs the example twice on one -store of each kind:
// the second process finds both effects recorded and executes nothing.
func TestMainJobOnEachStore(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	manifests := filepath.Join("..", "..", "manifests")
	executed := regexp.MustCompile(`(?m)^\S+ (refund_order|send_email)\s+OK .*\(executed now\)$`)
	_, pgURL := pgtest.Start(t).NewDatabase(t)
	stores := map[string]struct{ spec, kind string }{
		"postgres": {pgURL, "(Postgres)"},
		"redis":    {"redis://" + redistest.Start(t, redistest.WithDurability()).Addr + "/0", "(Redis)"},
		"sqlite":   {filepath.Join(t.TempDir(), "dedup.db"), "(SQLite)"},
	}
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			state := t.TempDir()
			for run_, want := range []int{2, 0} {
				var out, errOut strings.Builder
				if code := run(context.Background(), []string{"-manifests", manifests, "-state", state, "-store", st.spec}, &out, &errOut); code != 0 {
					t.Fatalf("run %d exited %d: %s\n%s", run_+1, code, errOut.String(), out.String())
				}
				if !strings.Contains(out.String(), "effector dedup store: ") || !strings.Contains(out.String(), st.kind) {
					t.Fatalf("run %d's trace does not name a %s store:\n%s", run_+1, st.kind, out.String())
				}
				if n := len(executed.FindAllString(out.String(), -1)); n != want {
					t.Fatalf("run %d executed %d intents, want %d:\n%s", run_+1, n, want, out.String())
				}
				if run_ == 0 {
					runPrintedApprovals(t, out.String())
				}
			}
		})
	}
}

func TestStoreFlagRefusesAnUnknownScheme(t *testing.T) {
	var out, errOut strings.Builder
	code := run(context.Background(), []string{"-manifests", filepath.Join("..", "..", "manifests"), "-state", t.TempDir(), "-store", "mysql://u:secret@h/db"}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "want a postgres://, postgresql:// or redis:// URL, or a SQLite file path") {
		t.Fatalf("code %d, stderr %q: want the scheme refused, saying what is accepted", code, errOut.String())
	}
	if strings.Contains(errOut.String(), "secret") {
		t.Fatalf("stderr %q shows the password", errOut.String())
	}
}
