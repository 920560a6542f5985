package sqlitestore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
)

// raceEnv makes this test binary a process of TestBudgetsHoldAcrossProcesses:
// it opens the file the variable names and races on its budget.
const raceEnv = "TOOLREG_SQLITE_BUDGET_RACE"

func TestMain(m *testing.M) {
	if path := os.Getenv(raceEnv); path != "" {
		os.Exit(budgetRaceProcess(path))
	}
	os.Exit(m.Run())
}

func budgetRaceProcess(path string) int {
	s, err := Open(context.Background(), path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer s.Close()
	return storetest.BudgetRaceProcess(s)
}

func TestBudgetConformance(t *testing.T) {
	storetest.RunBudgetsWithClock(t, func(t *testing.T, now func() time.Time) effector.BudgetStore {
		return openForTest(t, filepath.Join(fastTempDir(t), "dedup.db"), WithClock(now))
	})
}

// Four processes of sixteen workers each, on one file, race round after
// round on a budget: each round they admit exactly its limit. The counts
// survive them: a store opened afterwards finds each budget full.
func TestBudgetsHoldAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "effects.db") // the real disk: fsyncs and all
	openForTest(t, path).Close()                     // made before the race, so no process waits on its creation
	storetest.RunBudgetRaceProcesses(t, 4, func(ctx context.Context) *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), raceEnv+"="+path)
		return cmd
	})
	s := openForTest(t, path)
	c, a, err := s.ClaimAdmit(context.Background(), "after-the-race", storetest.Call, time.Minute,
		[]effector.BudgetUse{storetest.RaceBudget(0)})
	if err != nil || c.State != effector.Claimed || a.Refused != 0 {
		t.Fatalf("after the race, in a store opened anew: %v %s refused %d; want the budget full", err, c.State, a.Refused)
	}
}

// Uses that stopped counting leave the file with the automatic sweep.
func TestTheSweepDeletesExpiredBudgetUses(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := openForTest(t, filepath.Join(fastTempDir(t), "dedup.db"), WithClock(clock.Now), WithSweepInterval(time.Minute))
	ctx := context.Background()
	for i := range 3 {
		if _, _, err := s.ClaimAdmit(ctx, fmt.Sprint("i-", i), storetest.Call, time.Minute,
			[]effector.BudgetUse{{Key: "k", Group: "k", Limit: 5, Window: time.Second}}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(2 * time.Minute)
	storetest.MustClaim(t, s, "after", time.Minute) // a write that runs the due sweep
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM effector_budget`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d budget rows after the sweep (%v), want 0", n, err)
	}
}
