// Command effectord is the effector service the fault tests of package
// internal/faulttest run as real processes and kill: effector.Serve over a
// JSONL intents file (checkpointed) into a JSONL results file, with a SQLite,
// Redis or Postgres (-store=postgres://...) dedup store, and one
// side-effecting tool, "apply", whose effect is a call to a fake downstream
// service.
//
// With -stream=<host:port> it reads intents from the Redis stream "intents"
// as consumer -consumer of group "effectors" and appends results to the
// stream "results" (package effector/redisstream) instead, until SIGTERM.
// With -stream=nats://host:port[,host:port...]/<queue> it serves the NATS
// JetStream queue of that name (package effector/natsstream): intents
// fetched in batches of -batch through the durable consumer the effectors
// share, with AckWait -ack-wait (default: the lease), results published to
// the queue's results stream. Its connection reconnects for ever and every
// JetStream request is retried until a leader answers, so a node or the
// whole cluster restarting stalls it rather than ends it. With -ready it
// appends its pid to that file once its consumer is made, as it starts to
// serve, so that a test can send intents when every effector takes them.
//
// The downstream service is a log file shared by every process of a test.
// Each call appends one line, with O_APPEND and fsync:
//
//	<intent id> <pid> applied|duplicate
//
// Without -dedup every call applies its effect ("applied"). With -dedup the
// downstream deduplicates on the idempotency key (the intent id): the first
// call for a key applies it, later ones are logged as "duplicate" and applied
// no more (an O_EXCL marker file per key makes that atomic across processes).
//
// The kill points live here, not in the library: with -kill-at=POINT and
// -kill-n=N the process SIGKILLs itself the N-th time it reaches POINT,
// after appending "<point> <intent id> <pid>" to -kills (fsynced), so the test
// knows which intent each kill hit. The points:
//
//	after-claim                 Claim returned Claimed; nothing ran
//	in-tool                     the downstream call was made; the tool has not returned
//	after-tool-before-complete  the tool returned; its result is not recorded
//	after-complete              the result is recorded; not yet published nor acknowledged
//
// -poison=ID makes the process SIGKILL itself inside the tool, before the
// downstream call, every time it runs intent ID: a poison intent, which the
// effector must give up after -max-attempts (effector.WithMaxAttempts) and
// hand to the dead-letter sink. Dead letters (poison intents, and entries
// that are no intent, with their offset and bytes) are appended to -dead.
// -torn-wait is jsonl.WithTornLineWait: a last line without its newline
// ends the run with an error once it has passed.
//
// -stop-in-tool=ID makes the process SIGSTOP itself inside the tool, before
// the downstream call, for intent ID (a paused owner: a GC pause, a VM
// migration); continued, it makes the call late. Every Complete's outcome is appended to -completes as
// "<intent id> <pid> ok|not-owner|error", and every claim the store reports
// as reclaimed (Claim.Reclaimed: an earlier claim ran out without Complete or
// Release) to -reclaims as "<intent id> <pid>"; every claim that found the
// intent claimed by another owner or answered, to -found as
// "<intent id> <pid> in-flight|done".
//
// With -fail-complete-after=N and -fail-complete-for=D, the N-th Complete and
// every Complete in the D after it fail (a full disk freed D later), noted as
// "injected" in -completes. On SIGTERM Serve drains for -drain; a shutdown
// that leaves deliveries unanswered exits with status 3 (ExitUnanswered).
package main
