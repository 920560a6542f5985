package diff

import (
	"testing"
	"time"

	"github.com/beam-agents/toolreg"
)

// TestApprovalRemovedIsASafetyChange: dropping approval: required lets an
// effect run without a person's decision, which fails the PR (exit 1);
// adding it, or editing its reason or timeout, is compatible.
func TestApprovalRemovedIsASafetyChange(t *testing.T) {
	t.Parallel()
	with := func(a *toolreg.Approval) *toolreg.Spec {
		s := refund()
		s.Approval = a
		return s
	}
	cases := []struct {
		name     string
		old, new *toolreg.Approval
		want     Class
	}{
		{"removed", &toolreg.Approval{}, nil, Safety},
		{"added", nil, &toolreg.Approval{}, Compatible},
		{"reason edited", &toolreg.Approval{Reason: "a"}, &toolreg.Approval{Reason: "b"}, Compatible},
		{"timeout changed", &toolreg.Approval{Timeout: time.Hour}, &toolreg.Approval{Timeout: 2 * time.Hour}, Compatible},
	}
	for _, c := range cases {
		got := Compare([]*toolreg.Spec{with(c.old)}, []*toolreg.Spec{with(c.new)}).Changes
		if len(got) != 1 || got[0].Class != c.want || got[0].Path != "approval" {
			t.Errorf("%s: changes %v, want one %s change of approval", c.name, got, c.want)
		}
	}
	if got := Compare([]*toolreg.Spec{with(&toolreg.Approval{})}, []*toolreg.Spec{with(&toolreg.Approval{})}).Changes; len(got) != 0 {
		t.Errorf("unchanged approval: %v", got)
	}
}
