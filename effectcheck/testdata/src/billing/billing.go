// Package billing declares an effect function; package app binds it.
package billing

import "context"

type ChargeArgs struct{ Cents int }

func Charge(ctx context.Context, a ChargeArgs) (string, error) { return "charged", nil }

// Retry calls the effect function directly: only the whole program shows that
// Charge is bound as side-effecting.
func Retry(ctx context.Context) {
	Charge(ctx, ChargeArgs{}) // want `a call of Charge, bound as side-effecting tool "charge" at effectcheck/testdata/src/app/main.go:\d+`
}
