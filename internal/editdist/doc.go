// Package editdist measures how far apart two names are, for the "did you
// mean" hints of the binder and the registry. It refuses nothing: a distance
// is a pure function of two strings, and what is close enough is the caller's
// choice.
package editdist
