package effector_test

import (
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
)

func TestAnIntentWhoseArgumentsRepeatAKeyIsRejectedWithoutRunning(t *testing.T) {
	t.Parallel()
	tl := newTools(t)
	e := newEffector(t, tl, effector.NewMemoryStore())
	// A reviewer reading the staged JSON sees amount 1; encoding/json would
	// hand the tool 9000.
	in := intentFor("refund", `{"order_id":"o-1","amount":1,"amount":9000}`, 0)
	res, err := e.Process(testCtx(t), in)
	if err != nil {
		t.Fatalf("Process: %v", err)
	}
	if res.Status != intent.StatusRejected || !strings.Contains(res.ErrorMessage, "amount") || !strings.Contains(res.ErrorMessage, "each key once") {
		t.Fatalf("result = %v %q, want REJECTED naming the repeated key", res.Status, res.ErrorMessage)
	}
	if n := tl.calls.Load(); n != 0 {
		t.Fatalf("the function ran %d times", n)
	}
}
