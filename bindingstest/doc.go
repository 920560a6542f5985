// Package bindingstest checks, in a test, that a service's Go functions bind
// to its manifests: the check the binder makes at startup, made in CI without
// starting the service, so a pull request that edits a manifest out of step
// with its function fails before it merges, not at the next deploy.
//
// In a test file of the package that binds the service's tools:
//
//	func TestToolsBind(t *testing.T) {
//		bindingstest.Check(t, "../manifests", tools.Bind)
//	}
//
// where tools.Bind is the function the service calls on its Binder at startup
// (the one that calls bindings.ReadOnly and bindings.Effect). toolreg init
// writes such a test; go test runs it.
//
// It binds; it never runs a tool.
package bindingstest
