package modpath

import (
	"os"
	"path/filepath"
)

// Rel names a Go source file relative to the root of its module
// (bindings/binder.go), as go vet does, rather than by a base name that many
// files of a module share (main.go). A file built with -trimpath is named by
// its import path, which it keeps; one in no module keeps its full path.
func Rel(file string) string {
	if !filepath.IsAbs(file) {
		return file
	}
	root := ""
	for d := filepath.Dir(file); ; {
		if fi, err := os.Stat(filepath.Join(d, "go.mod")); err == nil && fi.Mode().IsRegular() {
			root = d
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			return file
		}
		d = parent
	}
	rel, err := filepath.Rel(root, file)
	if err != nil {
		return file
	}
	return filepath.ToSlash(rel)
}
