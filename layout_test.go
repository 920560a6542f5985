package toolreg_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRootPackageHoldsNoWireFormat keeps the root package the contract
// vocabulary: the beam-agents wire format (package intent, protobuf) is a
// concern of its own that runner, effector and mcpserver import, and the root
// package must not import it back, directly or through another package.
func TestRootPackageHoldsNoWireFormat(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "github.com/beam-agents/toolreg/intent",
			strings.HasPrefix(dep, "google.golang.org/protobuf/"):
			t.Errorf("package toolreg depends on %s: the wire format belongs to package intent, which imports toolreg, not the other way round", dep)
		}
	}
}
