package test

import (
	"encoding/json"
	"testing"

	"github.com/beam-agents/toolreg"
)

// The manifests of the scenarios, as a reviewer reads them in a PR.
const manifests = `name: lookup_customer
description: Look up a customer by id.
params:
  customer_id:
    type: string
    description: The customer's id.
  limit:
    type: integer
    default: 10
    minimum: 1
---
name: charge
description: Charge a customer's card.
side_effect: true
params:
  customer_id:
    type: string
  cents:
    type: integer
    minimum: 1
`

const untypedManifest = `name: lookup_customer
description: Look up a customer by id.
params:
  customer_id:
    type: string
  limit:
    default: 10
`

// loadSpecs returns the specs of src.
// TODO: load src with loader.LoadFS once the loader lands; until then these
// are the Specs it declares, built in Go.
func loadSpecs(t *testing.T, src string) []*toolreg.Spec {
	t.Helper()
	if src != manifests {
		t.Fatalf("no Go specs for this manifest")
	}
	pos := func(line int) toolreg.Pos { return toolreg.Pos{File: "manifests/tools.yaml", Line: line, Col: 1} }
	return []*toolreg.Spec{
		{Name: "lookup_customer", Description: "Look up a customer by id.", Pos: pos(1), Params: []*toolreg.Param{
			{Name: "customer_id", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "The customer's id."}, Pos: pos(4)},
			{Name: "limit", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Default: json.Number("10"), HasDefault: true, Minimum: new(1.0)}, Pos: pos(7)},
		}},
		{Name: "charge", Description: "Charge a customer's card.", SideEffect: true, Pos: pos(12), Params: []*toolreg.Param{
			{Name: "customer_id", Schema: toolreg.Schema{Type: toolreg.TypeString}, Pos: pos(16)},
			{Name: "cents", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Minimum: new(1.0)}, Pos: pos(18)},
		}},
	}
}

// loadErr returns the error of loading src.
func loadErr(t *testing.T, src string) error {
	t.Helper()
	if src != untypedManifest {
		t.Fatalf("no Go specs for this manifest")
	}
	spec := &toolreg.Spec{Name: "lookup_customer", Description: "Look up a customer by id.", Params: []*toolreg.Param{
		{Name: "customer_id", Schema: toolreg.Schema{Type: toolreg.TypeString}},
		{Name: "limit", Schema: toolreg.Schema{Default: json.Number("10"), HasDefault: true}, Pos: toolreg.Pos{File: "manifests/untyped.yaml", Line: 6}},
	}}
	return spec.Validate()
}
