// Package effectortest builds what tests and benchmarks of the effector's
// stores and transports need: a one-tool effect table whose function counts
// its calls, and intents for it. It is for tests and benchmarks only, and
// refuses nothing on its own: a setup that fails fails the test.
package effectortest
