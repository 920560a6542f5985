package redistest

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// slots is the number of hash slots of a Redis Cluster.
const slots = 16384

// Cluster is a Redis Cluster of redis-server child processes owned by one
// test: every node a master without replicas, the slots split evenly between
// them in the order of Addrs, nothing persisted.
type Cluster struct {
	// Addrs is host:port of each node.
	Addrs []string

	nodes []*Server
}

// StartCluster starts n cluster-enabled redis-servers on free 127.0.0.1 ports,
// assigns each an equal range of the slots, joins them, and waits until every
// node knows every other and reports cluster_state:ok. The nodes are killed
// when the test ends. A new cluster takes about two seconds to form: a master
// waits that long before it first reports ok.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	if n < 1 || n > slots {
		t.Fatalf("redistest: a cluster of %d nodes: want 1 to %d", n, slots)
	}
	c := &Cluster{}
	for range n {
		s := Start(t, clusterNode())
		c.nodes = append(c.nodes, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.form(ctx); err != nil {
		t.Fatalf("redistest: forming a cluster of %d nodes: %v", n, err)
	}
	return c
}

// form gives node i the slots [i*slots/n, (i+1)*slots/n) and config epoch i+1
// (distinct epochs spare the nodes resolving a collision), has the first node
// meet the others, and waits for every node to see the whole cluster.
func (c *Cluster) form(ctx context.Context) error {
	n := len(c.nodes)
	clients := make([]*redis.Client, n)
	for i, s := range c.nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		defer clients[i].Close()
	}
	for i, rdb := range clients {
		if err := rdb.ClusterAddSlotsRange(ctx, i*slots/n, (i+1)*slots/n-1).Err(); err != nil {
			return fmt.Errorf("node %s: CLUSTER ADDSLOTSRANGE: %w", c.Addrs[i], err)
		}
		if err := rdb.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("node %s: CLUSTER SET-CONFIG-EPOCH: %w", c.Addrs[i], err)
		}
	}
	for _, s := range c.nodes[1:] {
		host, port, _ := net.SplitHostPort(s.Addr)
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", host, port, s.busPort).Err(); err != nil {
			return fmt.Errorf("node %s: CLUSTER MEET %s: %w", c.Addrs[0], s.Addr, err)
		}
	}
	want := []string{"cluster_state:ok", fmt.Sprintf("cluster_known_nodes:%d", n), fmt.Sprintf("cluster_slots_ok:%d", slots)}
	for i, rdb := range clients {
		for {
			info, err := rdb.ClusterInfo(ctx).Result()
			if err == nil && hasLines(info, want) {
				break
			}
			select {
			case <-ctx.Done():
				if err == nil {
					err = fmt.Errorf("CLUSTER INFO still says\n%s", info)
				}
				return fmt.Errorf("node %s: waiting for %s: %w\n%s", c.Addrs[i], strings.Join(want, ", "), err, c.nodes[i].stopForLog())
			case <-c.nodes[i].exit:
				return fmt.Errorf("node %s exited while the cluster formed\n%s", c.Addrs[i], c.nodes[i].stopForLog())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

func hasLines(info string, want []string) bool {
	lines := strings.Split(strings.ReplaceAll(info, "\r", ""), "\n")
	for _, w := range want {
		if !slices.Contains(lines, w) {
			return false
		}
	}
	return true
}

// Client returns a go-redis cluster client for the cluster, closed when the
// test ends.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// stopForLog kills the server and returns what it logged; the log is only
// safe to read once the process has exited.
func (s *Server) stopForLog() string {
	s.kill()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}
