package bindings

import "context"

type Binder struct{}

func ReadOnly[A, R any](b *Binder, name string, fn func(context.Context, A) (R, error)) {}
func Effect[A, R any](b *Binder, name string, fn func(context.Context, A) (R, error))   {}
