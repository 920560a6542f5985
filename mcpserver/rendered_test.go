package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/registry"
)

// New lets the SDK check stand-ins for the schemas it renders (addRendered):
// that is sound only while every rendered tool passes the SDK's own checks
// of its real schemas. Every valid manifest in the repository must.
func TestRenderedToolsPassTheSDKChecks(t *testing.T) {
	t.Parallel()
	dirs := []string{"../manifests", "../registry/testdata/corpus", "../gen/testdata/manifests",
		"../provider/dispatch/testdata/manifests", "../toolsearch/testdata"}
	good, err := filepath.Glob("../loader/testdata/manifests/good/*")
	if err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, good...)
	var specs []*toolreg.Spec
	for _, d := range dirs {
		s, err := loader.Load(d)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		specs = append(specs, s...)
	}
	reg := registry.New()
	for _, s := range specs {
		_ = reg.Register(toolreg.NewTool(s)) // a name declared in two corpora is checked once
	}
	tools, err := mcpTools(reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) < 40 {
		t.Fatalf("only %d tools rendered: the corpus is not being read", len(tools))
	}
	withOutput := 0
	srv := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil)
	for _, mt := range tools {
		in := mt.InputSchema.(json.RawMessage)
		var root struct{ Type string }
		if err := json.Unmarshal(in, &root); err != nil || root.Type != "object" {
			t.Errorf("%s: input schema is not an object: %s", mt.Name, in)
		}
		if bytes.Contains(in, []byte("x-mcp-header")) {
			t.Errorf("%s: input schema has an x-mcp-header annotation: %s", mt.Name, in)
		}
		if mt.OutputSchema != nil {
			withOutput++
		}
		if err := addTool(srv, mt, nil); err != nil {
			t.Errorf("the SDK refuses a rendered tool: %v", err)
		}
	}
	if withOutput == 0 {
		t.Error("no rendered tool has an output schema: the SDK's check of one is not exercised")
	}
}

// addRendered hands the SDK stand-ins, and gives the tool its own schemas
// back: what the SDK lists is what was rendered.
func TestAddRenderedKeepsTheRenderedSchemas(t *testing.T) {
	t.Parallel()
	in := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}`)
	out := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`)
	mt := &mcp.Tool{Name: "find", Description: "Find.", InputSchema: in, OutputSchema: out}
	srv := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil)
	if err := addRendered(srv, mt, nil); err != nil {
		t.Fatal(err)
	}
	if got, ok := mt.InputSchema.(json.RawMessage); !ok || !bytes.Equal(got, in) {
		t.Errorf("input schema after addRendered: %#v", mt.InputSchema)
	}
	if got, ok := mt.OutputSchema.(json.RawMessage); !ok || !bytes.Equal(got, out) {
		t.Errorf("output schema after addRendered: %#v", mt.OutputSchema)
	}
	bare := &mcp.Tool{Name: "bare", Description: "Bare.", InputSchema: in}
	if err := addRendered(srv, bare, nil); err != nil {
		t.Fatal(err)
	}
	if bare.OutputSchema != nil {
		t.Errorf("a tool without an output schema got one: %#v", bare.OutputSchema)
	}
}

// The input stand-in spares the SDK a decode only while it does not encode;
// should it encode, the SDK would decode it for every tool again.
func TestTheInputStandInDoesNotEncode(t *testing.T) {
	t.Parallel()
	if b, err := json.Marshal(inputStandIn); err == nil {
		t.Errorf("the input stand-in encodes, as %s", b)
	}
}

// Tools are rendered and decoded in parallel, and fail as in order: with
// the error of the first tool, in registration order, that fails.
func TestTheFirstToolThatFailsIsTheError(t *testing.T) {
	t.Parallel()
	reg := registry.New()
	for i := range 40 {
		s := &toolreg.Spec{Name: fmt.Sprintf("t%02d", i), Description: "A tool.",
			Params: []*toolreg.Param{{Name: "n", Schema: toolreg.Schema{Type: toolreg.TypeInteger}}}}
		switch i {
		case 17:
			s.Params[0].Minimum = json.Number("one") // renders as JSON that does not parse
		case 31:
			s.Params[0].Minimum = json.Number("two")
		}
		if err := reg.Register(toolreg.NewTool(s)); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := reg.ProviderSchema("mcp")
	if err != nil {
		t.Fatal(err)
	}
	var want error
	for _, e := range entries {
		if _, want = decodeTool(e); want != nil {
			break
		}
	}
	if want == nil {
		t.Fatal("no entry fails to decode: the test does not test")
	}
	for range 20 {
		_, err := mcpTools(reg)
		if err == nil || err.Error() != want.Error() {
			t.Fatalf("mcpTools failed with %v, want the first tool's error, %v", err, want)
		}
	}
}
