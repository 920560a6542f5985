package effector_test

import (
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
)

func TestMemoryStoreBudgets(t *testing.T) {
	t.Parallel()
	storetest.RunBudgetsWithClock(t, func(t *testing.T, now func() time.Time) effector.BudgetStore {
		return effector.NewMemoryStore(effector.WithStoreClock(now))
	})
}
