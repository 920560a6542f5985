package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/intent"
	toolrunner "github.com/beam-agents/toolreg/runner"
)

type chargeArgs struct {
	Amount int `json:"amount"`
}

// An effector runs a budgeted tool against a SQLite file; toolreg budgets
// then shows the budget in use: its key, its count, its limit and when it
// frees, in a table and as JSON.
func TestBudgetsShowsTheBudgetsInUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "effects.db")
	b := bindings.New([]*toolreg.Spec{{Name: "charge", Description: "Charge.", SideEffect: true,
		Params:  []*toolreg.Param{{Name: "amount", Schema: toolreg.Schema{Type: toolreg.TypeInteger}}},
		Budgets: &toolreg.Budgets{PerEntity: &toolreg.WindowBudget{Calls: 2, Window: time.Hour}}}})
	bindings.Effect(b, "charge", func(context.Context, chargeArgs) (bool, error) { return true, nil })
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	e, err := effector.New(bound.Effector, store)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for seq := range 3 {
		a := toolrunner.NewActivation(bound.Pipeline, []byte("ticket-42"), int64(seq), toolrunner.WithClock(time.Now))
		in, err := a.Act("charge", json.RawMessage(`{"amount":1}`))
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Process(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]intent.Status{true: intent.StatusRejected, false: intent.StatusOK}[seq == 2]; res.Status != want {
			t.Fatalf("charge %d: %s %s", seq, res.Status, res.ErrorMessage)
		}
	}
	store.Close()

	var out, errOut bytes.Buffer
	if code := Main([]string{"budgets", path}, &out, &errOut); code != exitOK {
		t.Fatalf("toolreg budgets = %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "BUDGET ") {
		t.Fatalf("toolreg budgets printed\n%s", out.String())
	}
	f := strings.Fields(lines[1])
	if len(f) != 7 || strings.Join(f[:3], " ") != `charge entity="ticket-42" per_entity` || f[3] != "2" || f[4] != "2" {
		t.Fatalf("row %q, want the per_entity budget of charge for ticket-42, 2 used of 2", lines[1])
	}
	out.Reset()
	if code := Main([]string{"budgets", "-json", path}, &out, &errOut); code != exitOK {
		t.Fatalf("toolreg budgets -json = %d: %s", code, errOut.String())
	}
	var j budgetJSON
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	frees, _ := time.Parse(time.RFC3339, j.FreesAt)
	if j.Used != 2 || j.Limit != 2 || frees.Before(start.Add(time.Hour-time.Minute)) || frees.After(start.Add(time.Hour+time.Minute)) {
		t.Fatalf("budgets -json = %+v, want 2 of 2, freeing about an hour after %v", j, start)
	}
	if code := Main([]string{"budgets", filepath.Join(t.TempDir(), "missing.db")}, &out, &errOut); code != exitFindings {
		t.Fatalf("toolreg budgets of a missing file = %d, want %d", code, exitFindings)
	}
	if code := Main([]string{"budgets"}, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), "want 1 argument") {
		t.Fatalf("toolreg budgets without a store = %d: %s", code, errOut.String())
	}

}
