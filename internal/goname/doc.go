// Package goname turns manifest names into Go identifiers, one way for the
// whole module: toolreg gen writes argument structs with these names, and
// the binder suggests them when a param has no field, so what it suggests is
// what gen would write. It refuses nothing itself: a name with no letter or
// digit gives "", and gen refuses the manifest that has one.
package goname
