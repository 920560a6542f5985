// Package modpath names Go source files the way go vet does: relative to the
// root of their module (bindings/binder.go), never by a base name that many
// files of a module share (main.go).
package modpath
