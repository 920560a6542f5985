// Package test holds the cross-package tests: one per scenario of the seed
// spec (seed/tool-registry-spec.txt), named after it. Each test's comment
// gives the scenario's Go mapping. It holds no code of its own.
package test
