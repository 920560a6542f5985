package intent_test

import (
	"bytes"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// python returns Debian's python3, which python3-protobuf serves (.ci/run
// installs it), or else the python3 on PATH; the test fails, saying what
// to install, when neither can import google.protobuf.
func python(t *testing.T) string {
	t.Helper()
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	for _, p := range candidates {
		if err := exec.Command(p, "-c", "import google.protobuf").Run(); err == nil {
			return p
		}
	}
	t.Fatalf("no python3 can import google.protobuf (tried %s): install Debian's python3-protobuf, as .ci/run does", strings.Join(candidates, ", "))
	return ""
}

// contractReader runs testdata/python/contract_reader.py on b: Python's
// protobuf reading a ToolIntent with the beam-agents v1 contract's fields
// alone, as the Python runtime does. It returns what the script prints: the
// message serialized again, the unknown fields it kept, and whether the
// golden key verifies its signature the runtime's way.
func contractReader(t *testing.T, py string, b []byte) (again, unknown []byte, verdict string) {
	t.Helper()
	cmd := exec.Command(py, filepath.Join("testdata", "python", "contract_reader.py"), hex.EncodeToString(goldenKey))
	cmd.Stdin = strings.NewReader(hex.EncodeToString(b))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("contract_reader.py: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 {
		t.Fatalf("contract_reader.py printed %q; want 3 lines", out)
	}
	if again, err = hex.DecodeString(lines[0]); err != nil {
		t.Fatal(err)
	}
	if unknown, err = hex.DecodeString(lines[1]); err != nil {
		t.Fatal(err)
	}
	return again, unknown, lines[2]
}

// TestPythonProtobufKeepsTheToolCallIDAndVerifiesItsSignature: Python's
// protobuf, knowing only the contract's fields 1 to 14, keeps
// tool_call_id (field 1000) as an unknown field, writes the intent back
// byte for byte, and verifies a signature made here over it, clearing only
// fields 12 to 14 as the runtime does; a tool call id changed after signing
// fails its check. The fixture's own signature verifies there too, so the
// script checks as the runtime checks.
func TestPythonProtobufKeepsTheToolCallIDAndVerifiesItsSignature(t *testing.T) {
	t.Parallel()
	py := python(t)

	fixture := readFixture(t, "tool_intent_future_field.bin")
	again, _, verdict := contractReader(t, py, fixture)
	if !bytes.Equal(again, fixture) || verdict != "verified" {
		t.Fatalf("the Python runtime's own fixture: written back %x (want it unchanged), %s", again, verdict)
	}

	signed, b := signedWithCallID(t, "toolu_01A09q90qw90lq917835lq9")
	again, unknown, verdict := contractReader(t, py, b)
	if !bytes.Equal(again, b) {
		t.Errorf("Python writes back\n%x\nwant\n%x", again, b)
	}
	if !bytes.HasPrefix(unknown, toolCallIDField(signed.ToolCallID)) {
		t.Errorf("Python's unknown fields %x do not start with field 1000, the tool call id", unknown)
	}
	if verdict != "verified" {
		t.Errorf("Python's check of the signature over the tool call id: %s", verdict)
	}
	back := decodeIntent(t, again)
	if back.ToolCallID != signed.ToolCallID || back.VerifyHMAC(goldenKeys) != nil {
		t.Errorf("after Python: tool call id %q, VerifyHMAC %v", back.ToolCallID, back.VerifyHMAC(goldenKeys))
	}

	forged := *signed
	forged.ToolCallID = "toolu_forged"
	fb, err := forged.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, verdict := contractReader(t, py, fb); verdict != "bad signature" {
		t.Errorf("a tool call id changed after signing: Python says %s; want bad signature", verdict)
	}

	unsigned := decodeIntent(t, readFixture(t, "tool_intent_traced.bin"))
	unsigned.ToolCallID = "call_1"
	ub, _ := unsigned.MarshalBinary()
	if again, _, _ := contractReader(t, py, ub); !bytes.Equal(again, ub) {
		t.Errorf("an unsigned intent with a tool call id: Python writes back %x, want %x", again, ub)
	}
}
