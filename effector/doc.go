// Package effector executes side-effecting tools, each intent at most once.
//
// The pipeline never runs a side-effecting tool: Activation.Act stages a
// *intent.Intent whose id is a pure function of the activation's position,
// and the intents leave the pipeline with the activation's output. An Effector,
// the only holder of side-effecting functions, takes each one and returns its
// terminal *intent.Result:
//
//	eff, err := effector.New(bound.Effector, effector.NewMemoryStore(),
//		effector.WithVerify(effector.VerifyRequire, keys))
//	...
//	res, err := eff.Process(ctx, intent)
//
// Process refuses, in this order and before anything runs: an intent whose
// signature does not verify (dead-lettered, no result), an expired intent
// (EXPIRED, without touching the store), and, once it holds the intent's
// claim, an unknown or read-only tool or arguments that break the tool's
// contract (REJECTED). It runs the function through the ToolRunner under a
// timeout and records the outcome, OK or ERROR, in a DedupStore, from which
// every later delivery of the same intent is answered, byte-identical,
// without running anything again. A function that ran and failed is ERROR,
// never retried: its effect is unknown. It refuses to start with a lease that
// does not exceed a tool's timeout, the one setting under which two workers
// could run one intent.
//
// Every claim records the call (tool and a digest of the canonical
// arguments): an intent whose id is known for another call, a
// non-deterministic replay, is REJECTED without the stored result and with a
// *NonDeterministicError. An intent attempted more than WithMaxAttempts
// times (its workers kept dying mid-way) is given up: ERROR, and the
// dead-letter sink.
//
// A function finds the intent it runs for with IntentFrom, to pass its id
// downstream as an idempotency key.
//
// The DedupStore here, MemoryStore, serves one process; durable stores live
// in subpackages, and every store passes the conformance suite in package
// storetest.
package effector
