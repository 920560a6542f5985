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
//	if err != nil {
//		// No result to publish: leave the intent for redelivery.
//	}
//	if res.Status != intent.StatusOK {
//		// EXPIRED or REJECTED: nothing ran. ERROR: it ran and failed, or
//		// timed out, so its effect is unknown. res.ErrorMessage says which.
//		// (An OK result whose ErrorMessage starts "effect unknown" ran
//		// after an earlier attempt was cut off: it may have run twice.)
//	}
//
// Process refuses, in this order and before anything runs: an intent whose
// signature does not verify or whose id is not intent.IntentID of its entity
// key, seq and step (dead-lettered, nothing stored), an expired intent
// (EXPIRED, without touching the store, logged at level Warn: staged intents
// live runner.DefaultIntentTTL, 1h, unless runner.WithIntentTTL says
// otherwise), and, once it holds the intent's claim, an unknown or read-only
// tool, arguments above the size limit or that break the tool's contract
// (REJECTED). It runs the function through the ToolRunner under a timeout and
// records the outcome, OK or ERROR, in a DedupStore, from which every later
// delivery of the same intent is answered, byte-identical, without running
// anything again. A function that ran and failed is ERROR, never retried: its
// effect is unknown.
//
// Only the tool's timeout ends a function early: a caller whose context ends
// gets a *DetachedError at once while the function runs on and its real
// outcome is recorded. A result the store cannot record (Complete is retried
// until the lease ends) is never reported: Process returns an
// *UnrecordedError, the intent is not acknowledged, and its next owner runs
// it as reclaimed. New refuses a lease that does not exceed the longest tool
// timeout plus the store timeout plus LeaseMargin, under which two workers
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
//
// Serve runs an effector as a service: it receives intents from a Source,
// publishes their results to a Sink, and acknowledges each intent only once
// its result is published. This package holds Serve and the contracts a
// transport implements (Source, Sink, and BatchSource, BatchAcker and
// StagedSink for batches); the transports are drivers in subpackages: jsonl
// (a file with a checkpoint, or stdin and stdout), redisstream (Redis
// Streams), pgqueue (a Postgres table) and natsstream (NATS JetStream).
package effector
