// Package redisstore is an effector.DedupStore in Redis, for effectors on
// several hosts that share one Redis or one Redis Cluster.
//
// Each intent has one record, at the key prefix + "{i:" + id + "}" (see
// WithKeyPrefix). Its value is a claim ("c" and the owner's random
// token) or a terminal result ("d", the completing owner's token, and the
// result's bytes, exactly as completed). Claim is a single SET key value NX
// PX lease, run in a script that in the same round trip sets the attempt
// marker (below) if the SET won, or returns the value it found if not: Redis
// decides who wins, and the lease is the key's expiry, kept by the Redis
// server's clock, never a client's. Complete and Release are Lua scripts that
// compare the stored value with the caller's claim and only then replace (compare-and-set)
// or delete (compare-and-delete) it, atomically on the server; so a worker
// whose lease expired while it was paused can never overwrite or free the
// record of the next owner: it gets effector.ErrNotOwner. A result lives for
// its ttl as the key's expiry, then the intent may be claimed again.
//
// Taking a claim also sets an attempt marker, at the record's key + ":attempt",
// which Complete and Release delete: a claim that finds the marker follows an
// owner that vanished after claiming, and says so (effector.Claim.Reclaimed).
// It needs Redis 6.2 or later (SET ... GET).
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
// claim whose reply was lost runs out by its lease.
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
// The store refuses non-positive leases and result lifetimes, and a key
// prefix whose first hash tag is empty ("{}"), which would part an intent's
// keys on a cluster; leases are rounded up to whole milliseconds, Redis's
// unit.
package redisstore
