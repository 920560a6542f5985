package toolbind

import "sync/atomic"

// Gate is whether a remote tool is offered: package remote withdraws a tool
// whose server drifted from its manifest, and suspends the tools of a server
// it cannot reach or check, and every Tool made for that manifest (the
// pipeline's contract and the effector's bound tool) reads the same Gate.
// The zero Gate is open. A Gate is safe for concurrent use.
type Gate struct {
	state atomic.Pointer[gateState]
}

type gateState struct {
	reason    string
	temporary bool
}

// Withdraw takes the tool out of the offered set, saying why, for as long as
// the process runs: its server serves something its manifest does not pin.
func (g *Gate) Withdraw(reason string) { g.state.Store(&gateState{reason: reason}) }

// Suspend takes the tool out of the offered set until Restore: its server
// cannot be reached or checked now. It does not undo a Withdraw.
func (g *Gate) Suspend(reason string) {
	for {
		old := g.state.Load()
		if old != nil && !old.temporary {
			return
		}
		if g.state.CompareAndSwap(old, &gateState{reason: reason, temporary: true}) {
			return
		}
	}
}

// Restore offers a suspended tool again. It does not undo a Withdraw.
func (g *Gate) Restore() {
	for {
		old := g.state.Load()
		if old == nil || !old.temporary {
			return
		}
		if g.state.CompareAndSwap(old, nil) {
			return
		}
	}
}

// Withdrawn returns the reason the tool is out of the offered set, whether
// only for now (suspended), and whether it is out at all.
func (g *Gate) Withdrawn() (reason string, temporary, out bool) {
	if s := g.state.Load(); s != nil {
		return s.reason, s.temporary, true
	}
	return "", false, false
}
