// Package toolbind is the one door through which a Go function is attached to
// a tool: package bindings goes through it after checking that the function
// agrees with its manifest, and nothing outside this module can reach it.
//
// It exists so that package toolreg can keep the constructor of a bound Tool
// out of its public API: toolreg imports this package and, in its init, sets
// Attach; bindings (and this module's tests) call it. It refuses nothing
// itself: the checks belong to bindings.
package toolbind
