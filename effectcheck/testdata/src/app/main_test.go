package main

import (
	"context"
	"testing"

	"billing"
)

// An effect function's own tests call it: reported only with -test.
func TestCharge(t *testing.T) {
	billing.Charge(context.Background(), billing.ChargeArgs{}) // want `a call of Charge`
}
