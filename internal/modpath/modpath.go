package modpath

import (
	"os"
	"path/filepath"
	"sync"
)

// Rel names a Go source file relative to the root of its module
// (bindings/binder.go), as go vet does, rather than by a base name that many
// files of a module share (main.go). A file built with -trimpath is named by
// its import path, which it keeps; one in no module keeps its full path.
//
// A process names the same few files again and again (every binding made in
// one loop), so each file's name is found once and kept.
func Rel(file string) string {
	if !filepath.IsAbs(file) {
		return file
	}
	if rel, ok := named.Load(file); ok {
		return rel.(string)
	}
	rel := find(file)
	named.Store(file, rel)
	return rel
}

// named maps each file Rel was given to its name: source files, a bounded set.
var named sync.Map

func find(file string) string {
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
