// Package effectcheck finds code that would run a side-effecting tool inline,
// where a retried activation would run it again.
//
// It reports, at the use, with file:line:col:
//   - any use of a function bound with bindings.Effect other than the binding
//     itself: a call, a method value, or a copy into a variable that is later
//     called, since each lets the effect run outside the effector;
//   - any use of toolreg.Tool.Unwrap outside package effector, the one
//     sanctioned caller of that bypass.
//
// A function bound in package main and called directly in another package are
// only seen together over the whole program: Check loads every package the
// patterns name and checks them at once. Analyzer does the same within one
// package, for go vet -vettool; it sees Unwrap anywhere but only the effect
// functions bound in the package it checks.
package effectcheck
