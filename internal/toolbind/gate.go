package toolbind

import "sync/atomic"

// Gate is whether a remote tool is offered: package remote withdraws a tool
// whose server drifted from its manifest, and every Tool made for that
// manifest (the pipeline's contract and the effector's bound tool) reads the
// same Gate. The zero Gate is open. A Gate is safe for concurrent use.
type Gate struct {
	reason atomic.Pointer[string]
}

// Withdraw takes the tool out of the offered set, saying why. A later call
// replaces the reason.
func (g *Gate) Withdraw(reason string) { g.reason.Store(&reason) }

// Restore offers the tool again.
func (g *Gate) Restore() { g.reason.Store(nil) }

// Withdrawn returns the reason the tool was withdrawn, and whether it is.
func (g *Gate) Withdrawn() (string, bool) {
	if p := g.reason.Load(); p != nil {
		return *p, true
	}
	return "", false
}
