package effector_test

import (
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
)

func TestMemoryStoreConformance(t *testing.T) {
	storetest.RunWithClock(t, func(t *testing.T, now func() time.Time) effector.DedupStore {
		return effector.NewMemoryStore(effector.WithStoreClock(now))
	})
}
