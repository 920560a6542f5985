// Package sqlitestore is the embedded default effector.DedupStore: one SQLite
// file (modernc.org/sqlite, pure Go, no cgo) that several effector processes on
// one host may share.
//
// Durability comes first, because a claim or a result lost on power failure
// means a second execution of a side effect: the file runs in WAL mode with
// synchronous=FULL, every write is a BEGIN IMMEDIATE transaction (so two
// processes never both read "free" and both claim), and a busy timeout makes
// writers queue instead of failing.
//
// A row is either a claim (a random token and a lease deadline) or a terminal
// result (the bytes and an expiry), with the call it was claimed for (the
// 32-byte digest, then the tool name: effector.Call) and its count of
// attempts. A claim by another call is answered effector.Mismatch from the
// digest alone; a Release that leaves earlier attempts counted keeps the row,
// without a token. Files of older versions get the new columns at Open;
// their rows have no call, and match any. Both deadlines are wall-clock instants in
// the row, read against the local clock: every process sharing the file is on
// one host, so they share that clock. Expired rows are swept: a claim on an
// expired row replaces it at once, and a sweep deletes the rest every
// WithSweepInterval (and on demand with Sweep), except that a claim whose
// lease ran out without Complete or Release is kept for 24 hours, so that a
// later claim of its intent still learns it is Reclaimed.
//
// A lease must cover the tool's run and the Complete after it, and under
// contention a Complete can wait for the write lock (up to WithBusyTimeout):
// a Complete that arrives after the lease is refused, and the intent runs
// again. Four processes sharing one file on a loaded two-core machine made
// 400ms leases (250ms tool timeout) too short, and 5s leases enough; the
// effector's default (two minutes) leaves ample room.
//
// The write lock is SQLite's file lock, held for the length of one short
// transaction. A process stopped inside one (SIGSTOP, a debugger) holds it
// until it resumes or dies, and every other process on the file waits up to
// the busy timeout and then fails with SQLITE_BUSY; nothing is executed
// twice, but nothing progresses either. Do not pause effector processes that
// share a file; stop them.
//
// Writes are group-committed: claims, completions and releases that arrive
// while a transaction commits queue, and the first of them then runs all
// queued (up to WithBatch's size, DefaultBatchSize) in one transaction, one
// fsync; a caller alone commits at once, as without batching. A leader waits
// for more only while callers the last batch released (or that queued while
// it ran) have not queued their next op, and at most WithBatch's delay
// (DefaultBatchDelay, 200µs). Each op fails alone: a failing statement undoes
// only itself, and an op of several statements (a release) runs in a
// savepoint rolled back on failure. Every caller returns only once the
// transaction holding its op has committed. A claim that finds its intent
// done or in flight writes nothing, so a batch of redeliveries commits
// without an fsync.
//
// The batch forms (ClaimBatch, CompleteBatch, ReleaseBatch) queue their items
// on the same group commit, together and in order, each item an op: a batch
// commits in one transaction with whatever else is queued, and its items
// answer as single calls made one after another would (an id twice in a
// batch is claimed by its first occurrence). Each item is a prepared
// statement of its own, so SQLite's limit on a statement's variables never
// applies; the store's limit is WithBatch's size, the most ops one
// transaction holds: a larger batch is split over transactions committed one
// after another, and answers once the last has committed. A batch whose
// context ends leaves its items still queued unwritten (they answer the
// context's error) and waits for those a transaction already holds.
//
// The store refuses non-positive leases and result lifetimes, and refuses a
// Complete or Release whose token no longer holds a live claim, with
// effector.ErrNotOwner.
package sqlitestore
