// Package tools holds the support agent's tool argument types and binding
// helpers, generated from the manifests by toolreg gen. Regenerate with
// go generate after editing a manifest; CI checks that nothing changes.
package tools

//go:generate go run ../../../cmd/toolreg gen -pkg tools -o tools_gen.go ../../../manifests
