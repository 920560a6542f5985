// Package pgqueue is a Postgres transport for effector.Serve: intents wait in
// a table, effectors claim them with FOR UPDATE SKIP LOCKED, and results and
// dead letters go to tables of the same database, so a fleet can run the
// whole effect path on the Postgres it already runs (with effector/pgstore as
// the dedup store).
//
// A pipeline enqueues intents with Enqueue, inside its own transaction if it
// likes (the outbox pattern): they become visible to effectors only when that
// transaction commits, and a rolled-back transaction enqueues nothing. The
// commit notifies Channel, which wakes idle Sources at once; a Source also
// polls every WithPollInterval (DefaultPollInterval), which is all it does
// while its listening connection is down, and how it finds intents whose
// lease ran out.
//
// A Source claims a batch of visible rows in one statement that skips rows
// other consumers have locked, and leases them (WithLease): a claimed row is
// invisible until its lease ends, and counts one more delivery. Serve
// acknowledges a delivery only after its result is published, and the
// acknowledgement deletes the row, fenced by the claim's token (an owner
// whose lease lapsed and was taken over deletes nothing); the rows of the
// intents finished together are deleted in one statement (Source.AckBatch).
// So delivery is at
// least once: a consumer that dies, hangs or loses its connection after
// claiming leaves its rows to come back when their leases end, and the dedup
// store answers a delivery of an intent that already ran with its recorded
// result. The delivery count feeds effector.WithMaxAttempts (through
// effector.Delivery.Deliveries): an intent whose processing kills the
// effector each time is given up, with an ERROR result, and handed to the
// effector's dead-letter sink; pass Queue.DeadLetter to effector.WithDeadLetter
// to keep it in the queue's dead-letter table.
//
// A row whose bytes are no intent (torn, garbage, or without an intent id) is
// delivered with Delivery.Err, and its acknowledgement moves it, bytes and
// reason, to the dead-letter table instead of deleting it.
//
// The Sink writes each result to the results table, keyed by queue and intent
// id: the first result published for an id stays, and a duplicate (a
// redelivery, a duplicate enqueue) adds nothing. It is an
// effector.StagedSink: the results Serve stages while a write is under way
// go together in the next one, one INSERT of every result staged by then.
// Read one with Queue.Result; delete old ones with Queue.PurgeResults.
//
// Rows hold the wire bytes of the intent package (intent.Intent.AppendBinary,
// intent.Result.AppendBinary). The tables are made by effector/pgstore's
// migrations (pgstore.Migrate, or toolreg migrate), from schema version 2;
// Open refuses a database at another version, saying what to run.
//
// It refuses: a nil pool, an empty queue name or one Postgres text cannot
// hold, non-positive leases, poll intervals and batches.
package pgqueue
