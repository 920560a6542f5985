package loader_test

import (
	"fmt"
	"testing/fstest"

	"github.com/beam-agents/toolreg/loader"
)

func ExampleLoad() {
	specs, err := loader.Load("../manifests")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range specs {
		fmt.Printf("%-17s side_effect=%-5v params=%d  %s\n", s.Name, s.SideEffect, len(s.Params), s.Pos)
	}
	// Output:
	// lookup_customer   side_effect=false params=2  ../manifests/lookup_customer.yaml:2:1
	// lookup_order      side_effect=false params=1  ../manifests/orders.yaml:2:1
	// search_orders     side_effect=false params=3  ../manifests/orders.yaml:37:1
	// refund_order      side_effect=true  params=4  ../manifests/refund_order.yaml:3:1
	// refund_over_limit side_effect=true  params=3  ../manifests/refund_over_limit.yaml:5:1
	// search_kb         side_effect=false params=3  ../manifests/support.cue:5:8
	// send_email        side_effect=true  params=5  ../manifests/support.cue:57:8
}

// LoadFS reports every problem of every manifest at once, each with its
// file:line:col, tool and field path.
func ExampleLoadFS_errors() {
	fsys := fstest.MapFS{
		"manifests/refund.yaml": {Data: []byte(`name: refund
description: Refund an order.
side_effect: true
params:
  amount:
    type: number
    tpye: number
  reason:
    description: Why.
`)},
		"manifests/search.yaml": {Data: []byte(`name: search_orders
description: Search orders.
params:
  limit: {type: integer, default: 0, minimum: 1}
`)},
	}
	_, err := loader.LoadFS(fsys, "manifests")
	fmt.Println(err)
	// Output:
	// toolreg: 3 problems:
	// 	manifests/refund.yaml:7:5: refund: params.amount.tpye: field not allowed: "tpye" is no keyword of type number, which takes type, description, default, enum, minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf
	// 	manifests/refund.yaml:8:3: refund: params.reason: missing type: set type to one of string, integer, number, boolean, array, object
	// 	manifests/search.yaml:4:26: search_orders: params.limit.default: default 0 does not satisfy its own param: minimum: got 0, want 1; fix the default or the constraint
}
