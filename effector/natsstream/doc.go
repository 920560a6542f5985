// Package natsstream is the NATS JetStream transport of effector.Serve, for
// effectors on several hosts sharing a replicated stream of intents, with
// no single database between them: intents, results and dead letters live
// in three streams of a JetStream cluster (R3 by default: each on three
// servers, writable with one of them down).
//
// A Queue (Open) names the streams. Producers publish intents with
// Queue.Add, each with Nats-Msg-Id set to Token(intent id): the server drops
// a publish whose id it saw within the stream's duplicate window
// (WithDuplicateWindow, the server's default of 2 minutes), so a producer
// may retry an Add whose outcome it does not know. Past the window, a
// republished intent is stored and delivered again, and the effector's dedup
// store answers it with the recorded result (within the effector's result
// TTL). For a dedup with no window, WithDedupPerSubject gives each intent id
// a subject of its own and has the stream keep one message a subject,
// refusing others (MaxMsgsPerSubject 1, DiscardNewPerSubject), for as long
// as the stream keeps the intent (WithIntentTTL).
//
// A Source (Queue.NewSource) fetches intents in batches through a durable
// pull consumer the effectors share (each intent goes to one of them), and
// hands them to Serve; ReceiveBatch hands over what one fetch returned.
// While Serve holds an intent the source signals the server it is in
// progress, so a long tool never outlives AckWait; Serve acknowledges an
// intent only after its result is published, and the acknowledgement waits
// for the server's confirmation (a double ack; those of the intents finished
// together are sent at once: Source.AckBatch). So delivery is at least
// once: an effector that dies or stalls past AckWait leaves its intents to
// come back to another, and the dedup store answers those that ran. AckWait
// must not exceed the effector's claim lease (see Source). Each delivery
// carries the server's delivery count (Delivery.Deliveries), which feeds
// effector.WithMaxAttempts; an intent delivered more than WithMaxDeliver
// times goes to the dead-letter stream with the reason, and so do, through
// Queue.DeadLetter and Queue.EntryDeadLetter, the intents the effector
// refuses or gives up and the entries that are no intent.
//
// The Sink publishes each result on the intent's own subject with the same
// message id, and the results stream keeps the first result of a subject:
// a republished answer (a redelivery answered again, a retried publish) is
// dropped. It is an effector.StagedSink: Serve has it send results
// asynchronously and waits for many at once, rather than a round trip to
// three fsyncing servers each. Queue.Result reads one result without
// making a consumer; Queue.Results and Queue.DeadLetters read a stream
// whole through a consumer they delete when done.
//
// Every JetStream call is tried with a short timeout of its own
// (WithRequestTimeout), again while its context lasts, for up to 30
// seconds: until a cluster has elected its leaders, the servers do not
// answer, and after a restart they may answer "no responders" for a while.
// Past that, the error goes to the caller (Serve logs it and tries again).
//
// The servers must fsync every write before they acknowledge it
// (sync_interval: always): Jepsen's 2025 analysis of NATS 2.12.1 found
// acknowledged writes lost with the default, deferred fsync.
//
// It refuses: a nil JetStream context; queue and consumer names other than
// 1 to 32 letters, digits, '-' or '_'; an AckWait below MinAckWait or above
// the lease; non-positive windows, TTLs, timeouts, batches and delivery
// limits.
package natsstream
