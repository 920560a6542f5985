package loader

import "time"

// SetCUETimeout sets the limit on the CUE step of one package, for a test,
// and returns a function that restores it.
func SetCUETimeout(d time.Duration) (restore func()) {
	old := cueTimeout
	cueTimeout = d
	return func() { cueTimeout = old }
}

// SetCUEPhaseHook has hook called with "budget", "evaluate" or "decode" as
// the CUE step of a package enters that phase, for a test that holds a phase
// past the limit, and returns a function that restores the last hook.
func SetCUEPhaseHook(hook func(phase string)) (restore func()) {
	old := cuePhaseHook
	cuePhaseHook = func(p cuePhase) { hook(p.String()) }
	return func() { cuePhaseHook = old }
}
