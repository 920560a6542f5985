// Package toolreg is a stand-in with the shapes effectcheck looks for.
package toolreg

type Tool struct{ fn any }

func (t *Tool) Unwrap() any { return t.fn }
