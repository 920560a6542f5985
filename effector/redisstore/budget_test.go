package redisstore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// raceEnv makes this test binary a process of TestBudgetsHoldAcrossProcesses:
// it connects to the server the variable names and races on its budget.
const raceEnv = "TOOLREG_REDIS_BUDGET_RACE"

func TestMain(m *testing.M) {
	if addr := os.Getenv(raceEnv); addr != "" {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		os.Exit(storetest.BudgetRaceProcess(New(rdb)))
	}
	os.Exit(m.Run())
}

func TestBudgetConformance(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	var n atomic.Int32
	storetest.RunBudgets(t, func(t *testing.T) effector.BudgetStore {
		return New(rdb, WithKeyPrefix(fmt.Sprintf("budgets-%d:", n.Add(1))))
	})
}

// The suite on a real three-node cluster: an intent's budgets share a slot.
func TestBudgetConformanceOnACluster(t *testing.T) {
	t.Parallel()
	rdb := redistest.StartCluster(t, 3).Client(t)
	var n atomic.Int32
	storetest.RunBudgets(t, func(t *testing.T) effector.BudgetStore {
		return New(rdb, WithKeyPrefix(fmt.Sprintf("budgets-%d:", n.Add(1))))
	})
}

// Four processes of sixteen workers each, on one server, race round after
// round on a budget: each round they admit exactly its limit. The count is
// the server's: a store on a new connection finds each budget full.
func TestBudgetsHoldAcrossProcesses(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	storetest.RunBudgetRaceProcesses(t, 4, func(ctx context.Context) *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), raceEnv+"="+srv.Addr)
		return cmd
	})
	s := New(srv.Client(t))
	c, a, err := s.ClaimAdmit(context.Background(), "after-the-race", storetest.Call, time.Minute,
		[]effector.BudgetUse{storetest.RaceBudget(0)})
	if err != nil || c.State != effector.Claimed || a.Refused != 0 {
		t.Fatalf("after the race: %v %s refused %d; want the budget full", err, c.State, a.Refused)
	}
}
