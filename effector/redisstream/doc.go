// Package redisstream is the Redis Streams transport of effector.Serve, for
// effectors on several hosts that share one stream of intents and one stream
// of results.
//
// A Source reads intents from a stream in a consumer group (XREADGROUP), so
// each entry goes to one effector of the group. An entry stays in the group's
// pending list until Serve acknowledges it (XACK, one for each batch of
// intents finished together: Source.AckBatch), which it does only after
// the intent's result is published to the results stream by a Sink (XADD). An
// entry a consumer left pending (the effector died, or hangs) is reclaimed by
// another consumer with XAUTOCLAIM once it has been idle for the reclaim idle
// time (WithReclaimIdle), and a restarted consumer with the same name first
// takes back its own pending entries. So no intent is lost; one may be
// delivered twice (a reclaimed entry whose first consumer was only slow), and
// the dedup store answers the second delivery with the recorded result.
//
// An entry of the intents stream holds the intent's JSON form (see
// intent.Intent.MarshalJSON) in the field "intent"; Add writes one. An entry
// of the results stream holds the result's JSON form in the field "result"
// and its intent id in "intent_id". A result may appear twice (a redelivered
// intent, or a publish retried after its reply was lost), always the same
// result: consumers deduplicate by intent id. The Sink is an
// effector.StagedSink: the results Serve stages while a write is under way go
// together in the next one, one pipeline of XADDs, in staged order.
package redisstream
