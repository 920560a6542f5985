// Package registry resolves tool names to tools. A Registry is a value its
// caller owns; it refuses a second tool under a name it already holds.
package registry
