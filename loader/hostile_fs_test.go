//go:build unix

package loader_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
)

// loadWithin runs Load and fails the test if it does not return in time.
func loadWithin(t *testing.T, load func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- load() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Load did not return within 10s")
		return nil
	}
}

func TestAFIFONamedLikeAManifestIsRefusedWithoutHanging(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "x.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, fifo} {
		err := loadWithin(t, func() error { _, err := loader.Load(path); return err })
		var tde *toolreg.ToolDefinitionError
		if !errors.As(err, &tde) || len(tde.Problems) != 1 {
			t.Fatalf("Load(%s) = %v, want one problem", path, err)
		}
		if p := tde.Problems[0]; p.Pos.File != fifo || !strings.Contains(p.Message, "not a regular file") {
			t.Errorf("Load(%s): got %s, want the FIFO refused as not a regular file", path, p)
		}
	}
	// The same through an fs.FS.
	fsys := fstest.MapFS{"x.yaml": {Mode: os.ModeNamedPipe}}
	_, err := loader.LoadFS(fsys, ".")
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("LoadFS = %v, want the pipe refused", err)
	}
}

func TestASymlinkLeavingTheRootIsRefusedAndItsTargetNeverPrinted(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	outside := filepath.Join(base, "secret")
	manifests := filepath.Join(base, "manifests")
	for _, d := range []string{outside, manifests} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const secret = "root:$6$SECRETHASH$abcdefghijklmnop:19000:0:99999:7:::"
	if err := os.WriteFile(filepath.Join(outside, "shadow"), []byte(secret+"\nname: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(manifests, "x.yaml")
	if err := os.Symlink(filepath.Join(outside, "shadow"), link); err != nil {
		t.Fatal(err)
	}
	// A link that stays inside is followed.
	if err := os.WriteFile(filepath.Join(manifests, "real.txt"), []byte("name: inside\ndescription: d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.txt", filepath.Join(manifests, "alias.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{manifests, link} {
		_, err := loader.Load(path)
		if err == nil {
			t.Fatalf("Load(%s) accepted a link leaving its root", path)
		}
		if strings.Contains(err.Error(), "SECRETHASH") {
			t.Errorf("Load(%s) printed the target's contents:\n%v", path, err)
		}
		var tde *toolreg.ToolDefinitionError
		if !errors.As(err, &tde) {
			t.Fatalf("Load(%s) = %v", path, err)
		}
		found := false
		for _, p := range tde.Problems {
			found = found || p.Pos.File == link && strings.Contains(p.Message, "outside")
		}
		if !found {
			t.Errorf("Load(%s) = %v, want %s refused as a link outside", path, err, link)
		}
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	specs, err := loader.Load(manifests)
	if err != nil || len(specs) != 1 || specs[0].Name != "inside" {
		t.Fatalf("Load of a link that stays inside = %v, %v; want tool inside", specs, err)
	}
	if err := os.Symlink(filepath.Join(outside, "shadow"), link); err != nil {
		t.Fatal(err)
	}
	// Through os.DirFS, which follows links wherever they lead.
	_, err = loader.LoadFS(os.DirFS(manifests), ".")
	if err == nil || strings.Contains(err.Error(), "SECRETHASH") || !strings.Contains(err.Error(), "outside") {
		t.Errorf("LoadFS = %v, want the link refused, its target unprinted", err)
	}
}
