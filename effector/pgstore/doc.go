// Package pgstore is an effector.DedupStore in Postgres (through
// github.com/jackc/pgx/v5's pgxpool), for a fleet of effectors that already
// runs a Postgres database: any number of processes on any number of hosts
// share one table.
//
// It keeps the same three-state claim protocol as effector/sqlitestore and
// effector/redisstore, and passes effector/storetest. A row is either a claim
// (a random token and a lease deadline) or a terminal result (the bytes and
// an expiry), with the call it was claimed for (effector.Call: digest and
// tool name) and its count of attempts. Complete and Release change a row
// only where the token still holds a live lease, so an owner that stalled
// past its lease cannot touch its successor's record (the token fences it).
//
// Every instant is the database server's: leases and result lifetimes are
// written as clock_timestamp() plus the duration and judged against
// clock_timestamp(), so hosts whose clocks disagree still agree on when a
// lease ends. A claim is one INSERT ... ON CONFLICT DO UPDATE that either
// inserts a fresh claim or takes over a row whose lease or result ran out;
// only when it takes nothing does a second statement read why (in flight,
// done, or another call). Complete is one UPDATE.
//
// Concurrent claims and completions share transactions (group commit, see
// WithBatch): the statements queued while one batch is in flight go to the
// server in one pipeline, run as one transaction and are committed by one
// write-ahead-log flush; each caller returns only once its own statement has
// committed, and a statement that fails fails only its own call. A caller
// alone sends its statement at once. The transactions of TxFrom are never
// batched.
//
// The batch forms (ClaimBatch, CompleteBatch, ReleaseBatch) send a batch's
// items as arrays that one statement unnests, as River's completer does: one
// round trip and one transaction for up to WithBatch's size items, which it
// takes in intent id order, as the group commit's transactions do, so that
// no two wait on each other in a cycle. A batch claim answers the items it
// did not take from the same statement (in flight, done, mismatch). Items of
// one statement have distinct ids, so an id that repeats in a batch goes in
// a second statement after the first, and finds what the first left. The
// store's limit is WithBatch's size items and 64MiB of arrays a statement
// (not Postgres's 65535 parameters, since each column is one array
// parameter); a larger batch is split into statements, each a transaction of
// its own, sent one after another. A statement Postgres refuses (an ERROR)
// is sent again item by item, so a failing item fails alone; an item is
// answered only once its statement has committed. Batches do not go
// through the lanes: a batch already fills a statement. Batch statements
// are not prepared: each is planned for the table as it is when it runs
// (a prepared one could keep the plan made while the table was small,
// which reads every row), at a fraction of a millisecond a batch.
//
// Waiters are woken by LISTEN/NOTIFY. The store is an
// effector.InFlightWaiter: a worker that finds an intent in flight marks the
// claim as waited on and sleeps until the owner's Complete or Release,
// which notify Channel with the intent id in the transaction that changes
// the row, or until the effector's backoff (WithBackoff) passes: that is the
// polling fallback, and all there is while the store's listening connection
// is down (it dials again every second). Only a claim someone waits on
// notifies: a notifying commit takes a lock global to the database, which
// would serialize every Complete.
//
// The tables are versioned (SchemaVersion): Migrate creates or upgrades
// them, in one transaction under an advisory lock, and Open refuses a
// database at any other version with a *SchemaError that says what to run.
// Expired rows are deleted by Sweep, and by a Claim every WithSweepInterval,
// in batches of WithSweepBatch rows taken with FOR UPDATE SKIP LOCKED, so
// processes sweeping at once neither wait on each other nor delete a row
// being claimed. A claim whose lease ran out without Complete or Release is
// kept for AttemptMemory, so a later claim of its intent still learns it is
// Reclaimed.
//
// The store refuses non-positive leases and result lifetimes, and refuses a
// Complete or Release whose token no longer holds a live claim, with
// effector.ErrNotOwner.
//
// A call whose context ends while its statement waits (on a row lock, a
// busy server) returns the context's error, and the statement may still
// commit: pgx's default on a cancelled context closes the connection, and
// the server, which holds the whole statement, runs it to its end. So an
// error may hide a write, never the reverse: a Complete sent again then
// finds the row done and answers effector.ErrNotOwner, and the effector
// publishes the stored result. A pool configured with
// pgconn.CancelRequestContextWatcherHandler asks the server to cancel such
// a statement instead.
package pgstore
