package pgstore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

// raceEnv makes this test binary a process of TestBudgetsHoldAcrossProcesses:
// it connects to the database the variable names and races on its budget.
const raceEnv = "TOOLREG_PG_BUDGET_RACE"

func TestMain(m *testing.M) {
	if url := os.Getenv(raceEnv); url != "" {
		os.Exit(budgetRaceProcess(url))
	}
	os.Exit(m.Run())
}

func budgetRaceProcess(url string) int {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer pool.Close()
	s, err := Open(ctx, pool)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer s.Close()
	return storetest.BudgetRaceProcess(s)
}

func TestBudgetConformance(t *testing.T) {
	t.Parallel()
	pool := migrated(t, pgtest.Start(t))
	storetest.RunBudgets(t, func(t *testing.T) effector.BudgetStore {
		return openForTest(t, pool)
	})
}

// Four processes of sixteen workers each, on one database, race round
// after round on a budget: each round they admit exactly its limit. The
// count is the server's: a store opened afterwards finds each budget full.
func TestBudgetsHoldAcrossProcesses(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	pool, url := srv.NewDatabase(t)
	if err := Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	storetest.RunBudgetRaceProcesses(t, 4, func(ctx context.Context) *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), raceEnv+"="+url)
		return cmd
	})
	s := openForTest(t, pool)
	c, a, err := s.ClaimAdmit(context.Background(), "after-the-race", storetest.Call, time.Minute,
		[]effector.BudgetUse{storetest.RaceBudget(0)})
	if err != nil || c.State != effector.Claimed || a.Refused != 0 {
		t.Fatalf("after the race: %v %s refused %d; want the budget full", err, c.State, a.Refused)
	}
}
