package test

import (
	"testing"
	"testing/fstest"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
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

// loadSpecs loads src as the manifest manifests/tools.yaml, with the real loader.
func loadSpecs(t *testing.T, src string) []*toolreg.Spec {
	t.Helper()
	specs, err := loadErrSpecs(src)
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

// loadErr returns the error of loading src as manifests/tools.yaml.
func loadErr(t *testing.T, src string) error {
	t.Helper()
	specs, err := loadErrSpecs(src)
	if err == nil {
		t.Fatalf("the loader accepted the manifest: %d tools", len(specs))
	}
	return err
}

func loadErrSpecs(src string) ([]*toolreg.Spec, error) {
	fsys := fstest.MapFS{"manifests/tools.yaml": {Data: []byte(src)}}
	return loader.LoadFS(fsys, "manifests")
}
