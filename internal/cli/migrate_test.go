package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/effector/pgstore"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

func TestMigrateMakesADatabaseThatPgstoreOpens(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	pool, url := srv.NewDatabase(t)
	if _, err := pgstore.Open(context.Background(), pool); err == nil {
		t.Fatal("pgstore.Open on a new database succeeded, want it refused before migrate")
	}
	for range 2 { // a second run finds it current
		var out, errOut strings.Builder
		if code := Main([]string{"migrate", url}, &out, &errOut); code != 0 {
			t.Fatalf("toolreg migrate exited %d: %s", code, errOut.String())
		}
		if want := fmt.Sprintf("toolreg migrate: the database is at schema version %d\n", pgstore.SchemaVersion); out.String() != want {
			t.Fatalf("stdout = %q, want %q", out.String(), want)
		}
	}
	if _, err := pgstore.Open(context.Background(), pool); err != nil {
		t.Fatalf("pgstore.Open after toolreg migrate: %v", err)
	}

	if _, err := pool.Exec(context.Background(), `INSERT INTO toolreg_effector_schema (version) VALUES (99)`); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	if code := Main([]string{"migrate", url}, &out, &errOut); code != exitFindings || !strings.Contains(errOut.String(), fmt.Sprintf("version 99, newer than version %d", pgstore.SchemaVersion)) {
		t.Fatalf("toolreg migrate on a newer schema: exit %d, stderr %q; want 1 and the versions named", code, errOut.String())
	}
}

func TestMigrateUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate"}, "give the database's URL"},
		{[]string{"migrate", "a", "b"}, "give the database's URL"},
		{[]string{"migrate", "postgres://%zz"}, "toolreg migrate: "},
	} {
		var out, errOut strings.Builder
		if code := Main(tt.args, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), tt.want) {
			t.Errorf("toolreg %q: exit %d, stderr %q; want 2 and %q", tt.args, code, errOut.String(), tt.want)
		}
	}
}
