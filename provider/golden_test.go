package provider_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/provider"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// checkGolden compares got with testdata/name, or writes it there with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got):\n%s", path, diff)
	}
}

// goldenForms writes, under dir, one file per tool and form (<tool>/<form>.json,
// or <form>.err when the form refuses the tool) and one vet report per form.
func goldenForms(t *testing.T, dir string, specs []*toolreg.Spec) {
	for _, form := range provider.Forms() {
		for _, s := range specs {
			r, err := provider.Render(form, s)
			if err != nil {
				var ue *provider.UnsupportedError
				if !errors.As(err, &ue) {
					t.Fatalf("Render(%s, %s): %v, want an *UnsupportedError", form, s.Name, err)
				}
				checkGolden(t, filepath.Join(dir, s.Name, form+".err"), []byte(err.Error()+"\n"))
				continue
			}
			var buf bytes.Buffer
			if err := json.Indent(&buf, r.JSON, "", "  "); err != nil {
				t.Fatalf("Render(%s, %s) is not JSON: %v\n%s", form, s.Name, err, r.JSON)
			}
			buf.WriteByte('\n')
			checkGolden(t, filepath.Join(dir, s.Name, form+".json"), buf.Bytes())
		}
		fs, err := provider.Vet(form, specs)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, f := range fs {
			b.WriteString(f.String())
			b.WriteByte('\n')
		}
		checkGolden(t, filepath.Join(dir, "vet."+form+".txt"), []byte(b.String()))
	}
}

func TestGoldenFormsOfGoFixtures(t *testing.T) {
	t.Parallel()
	goldenForms(t, "fixtures", fixtures())
}

// Every form of every tool in the module's manifests/, refreshed with -update.
func TestGoldenFormsOfTheManifests(t *testing.T) {
	t.Parallel()
	specs, err := loader.Load(filepath.Join("..", "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) == 0 {
		t.Fatal("no tools in ../manifests")
	}
	// Positions name files relative to the module root, whatever the test's
	// working directory, so the vet reports read as the CLI prints them.
	for _, s := range specs {
		relPos(&s.Pos)
		relParams(s.Params)
	}
	goldenForms(t, "manifests", specs)
}

func relPos(p *toolreg.Pos) { p.File = filepath.ToSlash(strings.TrimPrefix(p.File, "../")) }

func relParams(ps []*toolreg.Param) {
	for _, p := range ps {
		relPos(&p.Pos)
		relParams(p.Properties)
		for it := p.Items; it != nil; it = it.Items {
			relParams(it.Properties)
		}
	}
}
