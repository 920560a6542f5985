package loader_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/loader"
)

// TestApprovalDecodes: approval: required, its reason and its timeout reach
// Spec.Approval; a tool without approval has none.
func TestApprovalDecodes(t *testing.T) {
	t.Parallel()
	specs, err := loader.LoadFS(os.DirFS(filepath.Join(corpus, "good")), "approval.yaml", "minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]int{}
	for i, s := range specs {
		by[s.Name] = i
	}
	large := specs[by["refund_large"]].Approval
	if large == nil || large.Reason != "Refunds above 500 EUR need a second person." || large.Timeout != 24*time.Hour {
		t.Errorf("refund_large: Approval = %+v", large)
	}
	if wire := specs[by["wire_money"]].Approval; wire == nil || wire.Reason != "" || wire.Timeout != 0 {
		t.Errorf("wire_money: Approval = %+v, want required with no reason or timeout", wire)
	}
	if a := specs[by["get_time"]].Approval; a != nil {
		t.Errorf("get_time: Approval = %+v, want nil", a)
	}
}
