package toolreg_test

import (
	"encoding/json"
	"fmt"

	"github.com/beam-agents/toolreg"
)

// SchemaJSON is the JSON Schema of one manifest document, for editors and
// other JSON Schema validators: its root is #Tool.
func ExampleSchemaJSON() {
	var s struct {
		Schema string `json:"$schema"`
		Ref    string `json:"$ref"`
		Defs   map[string]struct {
			Required []string `json:"required"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal([]byte(toolreg.SchemaJSON()), &s); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Schema)
	fmt.Println(s.Ref, "requires", s.Defs["Tool"].Required)
	// Output:
	// https://json-schema.org/draft/2020-12/schema
	// #/$defs/Tool requires [name description]
}
