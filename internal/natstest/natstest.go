package natstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Size is the number of nodes in a cluster: the smallest that keeps an R3
// stream writable with one node down.
const Size = 3

// readyWithin bounds how long a start or restart may take to elect its meta
// leader. Generous: on a loaded two-core machine an election takes seconds.
const readyWithin = 60 * time.Second

// Cluster is a three-node JetStream cluster running in this process.
type Cluster struct {
	name  string
	mu    sync.Mutex
	nodes []*node
}

// node is one server of the cluster. Its ports and store directory stay the
// same across restarts, so a restarted node rejoins with its data.
type node struct {
	name        string
	dir         string
	clientPort  int
	clusterPort int
	srv         *server.Server // nil while the node is stopped
}

// Start starts a cluster with its store directories in t.TempDir and shuts it
// down when the test ends. It returns once JetStream answers.
func Start(t testing.TB) *Cluster {
	t.Helper()
	c, err := StartIn(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	return c
}

// StartIn starts a cluster whose nodes keep their stores in subdirectories of
// dir (dir/n0, dir/n1, dir/n2), on free loopback ports, and returns once
// JetStream answers. The caller shuts it down (Shutdown).
func StartIn(dir string) (*Cluster, error) {
	var err error
	// Another process may take a probed port before a server binds it: try
	// fresh ports a few times.
	for attempt := 0; attempt < 3; attempt++ {
		var c *Cluster
		if c, err = tryStart(dir); err == nil {
			return c, nil
		}
	}
	return nil, err
}

func tryStart(dir string) (*Cluster, error) {
	ports, err := freePorts(2 * Size)
	if err != nil {
		return nil, fmt.Errorf("natstest: finding free ports: %w", err)
	}
	c := &Cluster{name: "toolreg-test"}
	for i := 0; i < Size; i++ {
		n := &node{
			name:        "n" + strconv.Itoa(i),
			clientPort:  ports[2*i],
			clusterPort: ports[2*i+1],
		}
		n.dir = filepath.Join(dir, n.name)
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			return nil, fmt.Errorf("natstest: %w", err)
		}
		c.nodes = append(c.nodes, n)
	}
	if err := c.startAll(); err != nil {
		c.Shutdown()
		return nil, err
	}
	return c, nil
}

// Main runs a package's tests against one cluster shared by all of them: it
// starts the cluster in a temporary directory, stores it in *c, runs m and
// shuts the cluster down. Use it from TestMain:
//
//	var cluster *natstest.Cluster
//
//	func TestMain(m *testing.M) { os.Exit(natstest.Main(m, &cluster)) }
//
// Tests sharing the cluster must not stop its nodes; a fault test starts its
// own (Start).
//
// A fuzzing worker process (go test -fuzz runs the target in several)
// starts no cluster: it runs only the fuzz target, and a cluster in each
// would starve them all.
func Main(m *testing.M, c **Cluster) int {
	if slices.ContainsFunc(os.Args, func(a string) bool { return strings.HasPrefix(a, "-test.fuzzworker") }) {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "natstest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "natstest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	cl, err := StartIn(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cl.Shutdown()
	*c = cl
	return m.Run()
}

// URLs returns each node's client URL, in node order. They stay the same
// across restarts.
func (c *Cluster) URLs() []string {
	urls := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		urls[i] = n.url()
	}
	return urls
}

// Hosts returns each node's client address, host:port, in node order.
func (c *Cluster) Hosts() []string {
	hosts := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		hosts[i] = "127.0.0.1:" + strconv.Itoa(n.clientPort)
	}
	return hosts
}

// URL returns the nodes' client URLs joined with commas, the form nats.Connect
// takes for a cluster.
func (c *Cluster) URL() string { return strings.Join(c.URLs(), ",") }

// Connect returns a client connection to the cluster that reconnects for
// ever (a test may stop nodes under it), closed when the test ends.
func (c *Cluster) Connect(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	opts = append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}, opts...)
	nc, err := nats.Connect(c.URL(), opts...)
	if err != nil {
		t.Fatalf("natstest: connecting to %s: %v", c.URL(), err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// StreamLeader returns the index of the node leading stream (a KV bucket B is
// the stream "KV_B"), waiting for an election if there is none yet.
func (c *Cluster) StreamLeader(t testing.TB, stream string) int {
	t.Helper()
	i, err := c.WaitStreamLeader(stream)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// WaitStreamLeader is StreamLeader for a program (the examples): it returns
// an error where StreamLeader fails the test.
func (c *Cluster) WaitStreamLeader(stream string) (int, error) {
	return c.leader(fmt.Sprintf("stream %q", stream), func(srv *server.Server) bool {
		return srv.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream)
	})
}

// ConsumerLeader returns the index of the node leading the consumer of
// stream, waiting for an election if there is none yet.
func (c *Cluster) ConsumerLeader(t testing.TB, stream, consumer string) int {
	t.Helper()
	i, err := c.leader(fmt.Sprintf("consumer %q of stream %q", consumer, stream), func(srv *server.Server) bool {
		return srv.JetStreamIsConsumerLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream, consumer)
	})
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// leader returns the index of the running node for which leads is true,
// the leader of what, waiting up to readyWithin for an election.
func (c *Cluster) leader(what string, leads func(*server.Server) bool) (int, error) {
	deadline := time.Now().Add(readyWithin)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		for i, n := range c.nodes {
			if n.srv != nil && leads(n.srv) {
				c.mu.Unlock()
				return i, nil
			}
		}
		c.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	return -1, fmt.Errorf("natstest: %s has no leader after %v", what, readyWithin)
}

// StopNode shuts node i down and waits until it has stopped. The other two
// keep a quorum: R3 streams stay writable once they elect a new leader.
func (c *Cluster) StopNode(i int) {
	c.mu.Lock()
	n := c.nodes[i]
	srv := n.srv
	n.srv = nil
	c.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// RestartNode starts node i again, stopping it first if it runs, from its
// store directory and on its ports, and waits until the cluster's JetStream
// answers with it.
func (c *Cluster) RestartNode(t testing.TB, i int) {
	t.Helper()
	c.StopNode(i)
	var err error
	// The node's old sockets may linger for a moment after the shutdown.
	for attempt := 0; attempt < 10; attempt++ {
		if err = c.startNode(c.nodes[i]); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("natstest: restarting node %d: %v", i, err)
	}
	if err := c.waitReady(); err != nil {
		t.Fatal(err)
	}
}

// Stop shuts every node down, as a power cut of the whole cluster would,
// short of losing unsynced writes (there are none: SyncAlways).
func (c *Cluster) Stop() {
	var wg sync.WaitGroup
	for i := range c.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); c.StopNode(i) }()
	}
	wg.Wait()
}

// Restart stops every node still running and starts the whole cluster again
// from its store directories, returning once JetStream answers.
func (c *Cluster) Restart(t testing.TB) {
	t.Helper()
	c.Stop()
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = c.startAll(); err == nil {
			return
		}
		c.Stop()
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("natstest: restarting the cluster: %v", err)
}

// Shutdown stops every node. It is safe to call more than once.
func (c *Cluster) Shutdown() { c.Stop() }

// startAll starts every stopped node and waits for JetStream to answer.
func (c *Cluster) startAll() error {
	for _, n := range c.nodes {
		if n.srv != nil {
			continue
		}
		if err := c.startNode(n); err != nil {
			return err
		}
	}
	return c.waitReady()
}

func (c *Cluster) startNode(n *node) error {
	var routes []string
	for _, o := range c.nodes {
		if o != n {
			routes = append(routes, "nats://127.0.0.1:"+strconv.Itoa(o.clusterPort))
		}
	}
	opts := &server.Options{
		ServerName: n.name,
		Host:       "127.0.0.1",
		Port:       n.clientPort,
		JetStream:  true,
		StoreDir:   n.dir,
		// Every acknowledged write is on disk first: the default deferred
		// fsync lost acknowledged writes in Jepsen's analysis of 2.12.1.
		SyncAlways: true,
		Cluster: server.ClusterOpts{
			Name: c.name,
			Host: "127.0.0.1",
			Port: n.clusterPort,
		},
		Routes:                 server.RoutesFromStr(strings.Join(routes, ",")),
		NoLog:                  true,
		NoSigs:                 true,
		DisableJetStreamBanner: true,
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("natstest: node %s: %w", n.name, err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return fmt.Errorf("natstest: node %s did not listen on 127.0.0.1:%d within 10s", n.name, n.clientPort)
	}
	c.mu.Lock()
	n.srv = srv
	c.mu.Unlock()
	return nil
}

// waitReady waits until the running nodes have a meta leader that counts
// them all as peers, each of them is current, and a JetStream API call
// answers. Each call has its own short timeout: a call made before the
// election gets no answer, and one long timeout would be spent on it.
func (c *Cluster) waitReady() error {
	deadline := time.Now().Add(readyWithin)
	var last error = errors.New("no meta leader elected")
	for time.Now().Before(deadline) {
		if err := c.metaReady(); err != nil {
			last = err
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if err := c.apiAnswers(); err != nil {
			last = err
			time.Sleep(20 * time.Millisecond)
			continue
		}
		return nil
	}
	return fmt.Errorf("natstest: JetStream not ready after %v: %v", readyWithin, last)
}

func (c *Cluster) metaReady() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	running, leaders := 0, 0
	peers := 0
	for _, n := range c.nodes {
		if n.srv == nil {
			continue
		}
		running++
		if !n.srv.JetStreamIsCurrent() {
			return fmt.Errorf("node %s is not current with the meta leader", n.name)
		}
		if n.srv.JetStreamIsLeader() {
			leaders++
			peers = len(n.srv.JetStreamClusterPeers())
		}
	}
	if leaders != 1 {
		return fmt.Errorf("%d meta leaders among %d running nodes", leaders, running)
	}
	if peers < running {
		return fmt.Errorf("the meta leader sees %d of %d running nodes", peers, running)
	}
	return nil
}

func (c *Cluster) apiAnswers() error {
	c.mu.Lock()
	var urls []string
	for _, n := range c.nodes {
		if n.srv != nil {
			urls = append(urls, n.url())
		}
	}
	c.mu.Unlock()
	nc, err := nats.Connect(strings.Join(urls, ","), nats.Timeout(2*time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

func (n *node) url() string { return "nats://127.0.0.1:" + strconv.Itoa(n.clientPort) }

// freePorts returns k distinct loopback ports free at the time of the call;
// they are held together so that no two are the same.
func freePorts(k int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, k)
	for i := 0; i < k; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
