// Package redisstore is an effector.DedupStore in Redis, for effectors on
// several hosts that share one Redis or one Redis Cluster.
//
// Each intent has one record, at the key prefix + "{i:" + id + "}" (see
// WithKeyPrefix). Its value is a claim ("c", the call, and the owner's random
// token) or a terminal result ("d", the call, the completing owner's token,
// and the result's bytes, exactly as completed). The call is the one the
// intent was claimed for (effector.Call: a one-byte length and the tool name,
// at most 64 bytes, then the 32-byte digest of the tool and arguments), so a
// claim by another call gets effector.Mismatch, never the result. Claim is a
// Lua script that, in one round trip, reads the record and, if it is free,
// sets it with the lease as the key's expiry and updates the attempt marker
// (below): Redis decides who wins, and the lease is kept by the Redis
// server's clock, never a client's. Complete and Release are Lua scripts
// that compare the stored claim's token with the caller's and only then
// replace (compare-and-set) or delete (compare-and-delete) it, atomically on
// the server; so a worker whose lease expired while it was paused can never
// overwrite or free the record of the next owner: it gets
// effector.ErrNotOwner. A result lives for its ttl as the key's expiry, then
// the intent may be claimed again.
//
// Taking a claim also sets an attempt marker, at the record's key +
// ":attempt", holding the call and the count of claims not released
// (effector.Claim.Attempts); Complete deletes it, Release counts its own
// attempt off. A claim that finds a marker of a claim follows an owner that
// vanished after claiming, and says so (effector.Claim.Reclaimed); one for
// another call is a Mismatch, since that owner may have run it. Records an
// older version wrote are reported as foreign: let their intents finish
// before upgrading. It needs Redis 6 or later (SET ... KEEPTTL).
//
// The store runs on Redis Cluster: the braces in the keys are a hash tag, so
// an intent's record and marker, which every script touches together, always
// share a slot, and intents spread over the nodes by id. Pass a
// *redis.ClusterClient to New. The tests run the conformance suite and an
// effector on a real three-node cluster.
//
// Complete and Release retry while the server is unreachable or loading,
// until their context ends, and every retry is safe: Complete recognizes the
// effect of an earlier attempt whose reply was lost. Claim does not retry: a
// claim whose reply was lost runs out by its lease. A client that sends a
// script again when its connection fails (go-redis does by default,
// MaxRetries times) is safe too: a claim that finds its own token reports
// Claimed.
//
// A lease must also outlast a server outage: a claim whose key expires while
// the server is down cannot be completed after it, and the intent runs again.
//
// Durability is Redis's: a result or claim survives a redis-server crash only
// if the server persists writes before acknowledging them (appendonly yes with
// appendfsync always). With weaker settings a crash can forget a completed
// intent, and it will be executed again. The tests prove both halves. Open
// checks the server's settings and refuses one that persists nothing (no
// append-only file, no snapshots) unless WithUnpersistedServer accepts it,
// with a warning; New checks nothing.
//
// Calls are group-committed: a store has lanes (WithLanes; DefaultLanes is
// one), each with at most one pipeline out at a time, on a connection of its
// own. A call goes out at once, alone, while a lane is free; calls that
// arrive while every lane has a pipeline out wait on the lane with the
// fewest, and the first of them then sends all waiting there (up to
// WithBatch's size, DefaultBatchSize) in one pipeline. Each script
// replies, and fails, on its own, and a pipeline whose connection fails
// fails its own calls only. A call carrying more than 1MiB (a big result) is
// sent on its own: a server refuses an argument over its proto-max-bulk-len
// by closing the connection, which would fail the pipeline's other calls.
//
// The batch forms (ClaimBatch, CompleteBatch, ReleaseBatch) run a batch's
// items in one batch script call where the items' keys may go together: the
// script runs each item's part (the single call's own script text) under
// pcall and answers each item on its own, so one item's error is its own,
// and the whole batch is one command (on a server with appendfsync always,
// one fsync). On one server every item goes together. On Redis Cluster a
// script's keys must share a hash slot, and intents' keys rarely do (each
// intent's id is its own hash tag), so a batch's intents span slots and
// nodes: items that share a slot go in one call, the others as single
// scripts, all in one pipeline, which go-redis's cluster pipeline sends to
// every node holding any of them at once, following redirections call by
// call: one round trip to each node, and a node that fails fails only its
// own items. A key prefix with a hash tag of its own ("{dedup}:") puts a
// whole batch in one slot, one call, on one node. Other clients (a Ring) get
// one script per item, in one pipeline. The store's limit is WithBatch's
// size items a call and calls a pipeline, and 1MiB of arguments a call past
// its first item; a call over 1MiB (a big result) goes on its own, after the
// others, so that one the network keeps failing holds none of them back. A
// larger batch is split into calls and pipelines sent one after another. An
// id that repeats in a batch goes in a later call than its first
// occurrence, and finds what that left. Completions and releases of a batch
// are sent again, as Complete's are, while the server is unreachable or
// loading.
//
// The store refuses non-positive leases and result lifetimes, and a key
// prefix whose first hash tag is empty ("{}"), which would part an intent's
// keys on a cluster; leases are rounded up to whole milliseconds, Redis's
// unit.
package redisstore
