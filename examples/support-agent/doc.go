// Command support-agent is toolreg's example agent service: a customer-support
// agent whose tools are declared in ../../manifests and bound to Go functions
// at startup.
//
// It plays a scripted conversation (model turns with tool calls, no network):
// read-only tools run inline through the runner, side-effecting ones are
// staged as intents with Act, and after the activation succeeds its intents are
// drained, sent as beam-agents wire bytes to the effector, and executed once,
// with a SQLite dedup store in a state directory. Then it replays the same
// activation, as a retried bundle would, to show that the refund is not
// executed twice. Run it again and the store remembers: nothing runs twice
// across processes either.
//
//	go run ./examples/support-agent [-manifests dir] [-state dir] [-script file]
package main
