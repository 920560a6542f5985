// Package natsstore is an effector.DedupStore on a NATS JetStream key-value
// bucket, for effectors that share their work across hosts without one
// database: an R3 bucket survives the loss of a node, and its
// compare-and-set on revisions fences the owners of a claim.
//
// An intent's record is one key. A claim is a publish that expects the key
// to have no message (a create), or to still be at the revision of the
// record it replaces: a lapsed claim, a released one, an expired result. A
// completion and a release are publishes that expect the revision of the
// owner's claim, so a worker whose lease ran out and whose claim another
// took cannot overwrite that owner's record: its write finds a newer
// revision and is refused (effector.ErrNotOwner). Every record keeps the
// call it was claimed for, so an id asked for by another call is a
// Mismatch, as in the other stores.
//
// Keys: an intent's key is "i." and the hex SHA-256 of its id, so any id
// makes a valid key of fixed length (an escaped id could push a subject
// past the server's 4 KiB line, which closes the connection, and an escape
// that folds white space would give two ids one record). The id itself is
// kept in the record, up to MaxIDBytes.
//
// Time: a record holds its lease's end or its result's expiry, to the
// millisecond, by the clock of the host that wrote it; the hosts sharing a
// bucket need clocks that agree to well within a lease (NTP does). Records
// also carry a per-message TTL (the bucket's stream has AllowMsgTTL), in the
// server's whole seconds, rounded up: the server removes a result once its
// TTL ends, a claim's record once its lease and the attempt memory
// (WithAttemptMemory) have passed, and a released record after the attempt
// memory. Until the server removes it, a record past its own deadline is
// treated as gone.
//
// The rule relating them: lease < attempt memory, and result TTL longer
// than the latest redelivery of an intent can come. The lease bounds how
// long one owner holds an intent before another may run it again (a
// transport's redelivery timer, such as effector/natsstream's AckWait,
// follows it as that package says); the attempt memory outlives the lease,
// or a lapsed claim is forgotten and its next owner is not told Reclaimed;
// the result outlives every redelivery (a stream's MaxAge, a producer's
// retries), or a late one runs the tool again. The bucket's stream has no
// MaxAge (Open creates it so, and refuses a bucket made with a TTL), so
// nothing but the records' own TTLs removes them.
//
// Reads go to the stream's leader (Open turns direct gets off, unless
// WithExisting asks it to change nothing): a read
// from a replica could miss a write it acknowledged, and a worker would see
// its own completed intent in flight. Writes are acknowledged once two of
// three replicas hold them; run the servers with sync_interval: always
// (Jepsen's 2025 analysis of 2.12.1 lost acknowledged writes under the
// default deferred fsync).
//
// Results: a result that fits one message with its record (the server's
// max_payload, 1 MiB by default, less a few KiB) is inline. A larger one
// is written first in parts, each on a key of its own named after the
// completing claim's token and kept 2s longer than the record, and the
// record names their count, length and SHA-256: a completion that loses its
// claim leaves parts that expire unread.
//
// Round trips: a claim first tries the create, and reads the key only if
// that finds a record; a completion or release by the Store that took the
// claim writes at the revision it remembers from the claim, and reads only
// if that write is refused. So a new intent costs two writes, as bare
// JetStream would (BenchmarkClaimComplete compares them).
//
// Requests: each request has its own timeout (WithAttemptTimeout) and is
// sent again while it gets no answer: until a stream's leader is elected,
// JetStream does not answer at all (a request cut by a lost connection is
// sent again on the reconnected one). A claim or completion whose write
// landed unanswered is recognized by its token when it is retried. A claim
// whose context ends before any answer came returns the context's error,
// and its write may have landed: the Store keeps its token, and its next
// claim of the same call on that intent uses it, finding its own record
// (Claimed, the lease renewed) rather than another owner's. Left: another
// Store (another process) finds that record InFlight until its lease runs
// out, then reclaims it, and the intent's result says its effect is
// unknown though its tool never ran.
//
// Batches: ClaimBatch sends every item's create, and CompleteBatch every
// item's update at its claim's revision, as asynchronous publishes, all
// before it awaits any answer; what they do not settle (a key with a
// record, a result in parts, a write refused or unanswered) goes on as
// the single call, WithBatchParallel items at once. An id twice in a batch
// is claimed or completed once, by its first occurrence, as the
// effector.DedupStore contract says. A batch has no limit of its own.
//
// Budgets (effector.BudgetStore): the budgets of one tool and entity share
// one key, and an admission is an update of it at the revision read, so an
// intent is counted against all its budgets or none and racing admissions
// never pass a limit. That key lives as long as its longest-lived use.
// Windows are measured with the admitting hosts' clocks.
//
// It refuses: a lease or TTL that is not positive, an intent id longer than
// MaxIDBytes, a bucket name JetStream would refuse, a bucket made with a
// TTL, and a key holding a value this store did not write.
package natsstore
