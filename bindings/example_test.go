package bindings_test

import (
	"context"
	"fmt"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
)

func ExampleBinder_Bind() {
	// Specs usually come from loader.Load("manifests").
	specs := []*toolreg.Spec{lookupSpec(), chargeSpec()}

	b := bindings.New(specs)
	bindings.ReadOnly(b, "lookup_customer", func(_ context.Context, a LookupArgs) (string, error) {
		return "customer " + a.CustomerID, nil
	})
	bindings.Effect(b, "charge", func(_ context.Context, a ChargeArgs) (int, error) {
		return a.Amount, nil
	})
	bound, err := b.Bind()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range bound.Pipeline.Tools() {
		fmt.Printf("pipeline: %s side_effect=%v function=%v\n", t.Name(), t.SideEffect(), t.Bound())
	}
	for _, t := range bound.Effector.Tools() {
		fmt.Printf("effector: %s side_effect=%v function=%v\n", t.Name(), t.SideEffect(), t.Bound())
	}
	// Output:
	// pipeline: lookup_customer side_effect=false function=true
	// pipeline: charge side_effect=true function=false
	// effector: charge side_effect=true function=true
}

func ExampleBinder_Bind_refused() {
	type Args struct {
		CustomerID int  `json:"customer_id"` // the manifest says string
		Limit      *int `json:"limit"`       // limit has a default: never absent
	}
	b := bindings.New([]*toolreg.Spec{lookupSpec(), chargeSpec()})
	bindings.ReadOnly(b, "lookup_customer", func(context.Context, Args) (string, error) { return "", nil })
	// charge is not bound.
	_, err := b.Bind()
	fmt.Println(err)
	// Output:
	// toolreg: 3 problems:
	//	tools.yaml:4:3: lookup_customer: params.customer_id: field bindings_test.Args.CustomerID has type int, which cannot hold the manifest's string values: use string
	//	tools.yaml:7:3: lookup_customer: params.limit: field bindings_test.Args.Limit is a pointer (*int) but the param is always present (required, or has a default): use int
	//	tools.yaml:20:3: charge: side-effecting tool "charge" has no binding: call bindings.Effect(b, "charge", fn) before Bind, or use bindings.PipelineOnly() in a process that does not run the effector
}
