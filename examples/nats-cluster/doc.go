// Command nats-cluster runs effectors on a NATS JetStream cluster, with
// nothing to install: it starts three JetStream servers in its own process
// (R3 streams, every write fsynced before it is acknowledged), publishes 60
// refund intents to an effector/natsstream queue (twice: the second time the
// server drops every one as a duplicate), and starts three effector
// processes (this same program) sharing the queue and an effector/natsstore
// dedup store: one R3 key-value bucket on the same cluster, so the
// effectors share nothing but the cluster.
//
//	go run ./examples/nats-cluster
//
// prints what each effector runs. Midway it stops the server leading the
// intents stream (the other two elect a new leader and go on) and kills one
// effector with SIGKILL while its tool runs: the intents it held come back
// to the others once AckWait passes, the bucket answers those it finished,
// and its claims on the others, fenced on the keys' revisions, lapse with
// its lease, so the next claim is told the effect is unknown. At the end it
// checks every intent: one result each, none lost, and a tool that ran twice
// (the one the killed effector was running) has a result saying its effect
// is unknown.
//
// It starts the cluster with internal/natstest, the helper toolreg's tests
// use; a service connects to its own cluster with nats.Connect instead.
package main
