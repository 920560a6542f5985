// Package natstest starts a real three-node NATS JetStream cluster inside the
// test process (server.NewServer, the way nats-server's own cluster tests do):
// loopback ports, JetStream on, every write fsynced before it is acknowledged
// (SyncAlways), each node routed to the other two, store directories kept so
// a node or the whole cluster restarts from them with its data.
//
// Start returns only once JetStream answers: until the meta leader is elected
// and every node has joined it, JetStream API calls get no answer at all, or
// an R3 stream finds too few peers. Fault tests shut down one node (the leader
// of a stream or a bucket: StreamLeader), restart it, or stop and restart the
// whole cluster. Main starts one cluster for all of a package's tests.
//
// Nothing is installed and nothing is downloaded: the servers come from the
// github.com/nats-io/nats-server/v2 module.
package natstest
