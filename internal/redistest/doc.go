// Package redistest starts a real redis-server for tests (Start), or a real
// Redis Cluster of several (StartCluster): on free loopback ports, with their
// files in a t.TempDir, stopped in t.Cleanup. It fails the test, never skips
// it, when redis-server is not installed, because tests that quietly skip
// prove nothing in CI.
package redistest
