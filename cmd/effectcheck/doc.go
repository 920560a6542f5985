// Command effectcheck reports code that would run a side-effecting tool inline:
// a use of a function bound with bindings.Effect other than its binding, and
// Tool.Unwrap outside package effector. It checks the whole program the
// patterns name, since a binding in main and a direct call elsewhere are only
// seen together.
//
//	go run ./cmd/effectcheck [-format format] [-test] ./...
//
// -format chooses the output on stdout: text (the default, file:line:col:
// message), github (one GitHub Actions workflow command a finding, an
// annotation on the line in the pull request), sarif (a SARIF 2.1.0 log,
// rules inline-effect and unwrap) or jsonl (one JSON object a finding).
//
// It exits 1 when it reports anything, 2 when the packages cannot be loaded.
//
// The same binary serves go vet, per package (it then sees Unwrap everywhere,
// but only the effect functions bound in the package being vetted):
//
//	go build -o /tmp/effectcheck ./cmd/effectcheck
//	go vet -vettool=/tmp/effectcheck ./...
package main
