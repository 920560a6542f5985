// Command effectcheck reports code that would run a side-effecting tool inline:
// a use of a function bound with bindings.Effect other than its binding, and
// Tool.Unwrap outside package effector. It checks the whole program the
// patterns name, since a binding in main and a direct call elsewhere are only
// seen together.
//
//	go run ./cmd/effectcheck [-test] ./...
//
// It exits 1 when it reports anything, 2 when the packages cannot be loaded.
//
// The same binary serves go vet, per package (it then sees Unwrap everywhere,
// but only the effect functions bound in the package being vetted):
//
//	go build -o /tmp/effectcheck ./cmd/effectcheck
//	go vet -vettool=/tmp/effectcheck ./...
package main
