package toolbind

import "testing"

// A withdrawal is for good; a suspension lasts until Restore, and never
// hides or undoes a withdrawal.
func TestGate(t *testing.T) {
	var g Gate
	if _, _, out := g.Withdrawn(); out {
		t.Fatal("the zero Gate is closed")
	}
	g.Suspend("down")
	if r, tmp, out := g.Withdrawn(); !out || !tmp || r != "down" {
		t.Fatalf("suspended: %q %v %v", r, tmp, out)
	}
	g.Restore()
	if _, _, out := g.Withdrawn(); out {
		t.Fatal("Restore left it suspended")
	}
	g.Suspend("down")
	g.Withdraw("drifted")
	g.Suspend("down again")
	g.Restore()
	if r, tmp, out := g.Withdrawn(); !out || tmp || r != "drifted" {
		t.Fatalf("after withdraw, suspend, restore: %q %v %v; want withdrawn for good", r, tmp, out)
	}
}
