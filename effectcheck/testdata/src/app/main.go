package main

import (
	"github.com/beam-agents/toolreg/bindings"

	"billing"
)

func main() {
	var b bindings.Binder
	bindings.Effect(&b, "charge", billing.Charge)
}
