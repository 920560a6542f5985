package effector_test

import (
	"testing"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
)

func TestMemoryStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) effector.DedupStore {
		return effector.NewMemoryStore()
	})
}
