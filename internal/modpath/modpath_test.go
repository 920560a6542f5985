package modpath

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestRelNamesAFileFromItsModuleRoot(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	if got := Rel(file); got != "internal/modpath/modpath_test.go" {
		t.Errorf("Rel(%s) = %q, want internal/modpath/modpath_test.go", file, got)
	}
	if got := Rel("github.com/x/y/main.go"); got != "github.com/x/y/main.go" {
		t.Errorf("a -trimpath name = %q, want it kept", got)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "m", "cmd", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "m", "go.mod"), []byte("module m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Rel(filepath.Join(dir, "m", "cmd", "a", "main.go")); got != "cmd/a/main.go" {
		t.Errorf("Rel = %q, want cmd/a/main.go", got)
	}
}

// Each file's name is found once: a second Rel does not look for go.mod again.
func TestRelFindsEachFileOnce(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "once.go")
	if got := Rel(file); got != "once.go" {
		t.Fatalf("Rel = %q, want once.go", got)
	}
	if err := os.Remove(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatal(err)
	}
	if got := Rel(file); got != "once.go" {
		t.Errorf("the second Rel = %q: it searched again", got)
	}
}
