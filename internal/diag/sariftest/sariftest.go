package sariftest

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed sarif-schema-2.1.0.json
var schemaJSON []byte

// SchemaURI is the $id of the SARIF 2.1.0 schema (errata 01).
const SchemaURI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaURI, doc); err != nil {
		return nil, err
	}
	return c.Compile(SchemaURI)
})

// Validate returns nil when log is JSON that meets the SARIF 2.1.0 schema,
// and otherwise an error that says where it does not.
func Validate(log []byte) error {
	s, err := compiled()
	if err != nil {
		return fmt.Errorf("sariftest: the embedded SARIF schema does not compile: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(log))
	if err != nil {
		return fmt.Errorf("sariftest: not JSON: %w", err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("sariftest: the log does not meet the SARIF 2.1.0 schema: %w", err)
	}
	return nil
}
