package redistest

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStartAnswersAndRestartKeepsTheAddress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := Start(t, WithDurability())
	c := srv.Client(t)
	if got := c.Ping(ctx).Val(); got != "PONG" {
		t.Fatalf("PING = %q, want PONG", got)
	}
	if !strings.HasPrefix(srv.Addr, "127.0.0.1:") {
		t.Fatalf("Addr = %q, want a loopback address", srv.Addr)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr
	srv.Restart(t)
	if srv.Addr != addr {
		t.Fatalf("Addr after Restart = %q, want the same %q", srv.Addr, addr)
	}
	if got := c.Get(ctx, "k").Val(); got != "v" {
		t.Fatalf("GET k after a durable restart = %q, want %q", got, "v")
	}
}

func TestWithoutDurabilityRestartEmptiesTheServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := Start(t)
	c := srv.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	srv.Restart(t)
	if n := c.Exists(ctx, "k").Val(); n != 0 {
		t.Fatalf("EXISTS k after a restart without persistence = %d, want 0", n)
	}
}

func TestStoppedServerIsKilledAtCleanup(t *testing.T) {
	t.Parallel()
	var addr string
	t.Run("server", func(t *testing.T) {
		srv := Start(t)
		addr = srv.Addr
	})
	// The subtest's cleanup ran: nothing answers on its port any more.
	c := (&Server{Addr: addr}).Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatalf("PING %s after the test ended succeeded, want the server gone", addr)
	}
}

func TestStartClusterSpreadsKeysOverEveryNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now()
	cl := StartCluster(t, 3)
	t.Logf("the cluster formed in %v", time.Since(start))
	if len(cl.Addrs) != 3 {
		t.Fatalf("Addrs = %q, want 3 nodes", cl.Addrs)
	}
	rdb := cl.Client(t)
	for i := range 30 {
		if err := rdb.Set(ctx, fmt.Sprintf("k%d", i), "v", 0).Err(); err != nil {
			t.Fatalf("SET through the cluster client: %v", err)
		}
	}
	var masters atomic.Int32
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		masters.Add(1)
		if n := node.DBSize(ctx).Val(); n == 0 {
			return fmt.Errorf("node %s holds none of 30 keys, want a share", node.Options().Addr)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := masters.Load(); got != 3 {
		t.Fatalf("the client sees %d masters, want 3", got)
	}
	if err := rdb.Eval(ctx, "return redis.call('MSET', KEYS[1], 1, KEYS[2], 2)", []string{"k1", "k2"}).Err(); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("a script on keys in two slots: err = %v, want CROSSSLOT: the nodes must really be a cluster", err)
	}
}

func TestStoppedClusterIsKilledAtCleanup(t *testing.T) {
	t.Parallel()
	var addrs []string
	t.Run("cluster", func(t *testing.T) {
		addrs = StartCluster(t, 2).Addrs
	})
	if len(addrs) != 2 {
		t.Fatalf("Addrs = %q, want 2 nodes", addrs)
	}
	for _, addr := range addrs {
		// Dialing once fails at once; a client would retry.
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Fatalf("connecting to %s after the test ended succeeded, want the node gone", addr)
		}
	}
}

// recorder is a testing.TB that records Fatalf instead of ending the test.
type recorder struct {
	testing.TB
	fatal string
}

type fatalled struct{}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = format
	panic(fatalled{})
}

func TestMissingRedisServerFailsTheTest(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // an empty directory: no redis-server
	tests := []struct {
		name  string
		start func(t testing.TB)
	}{
		{"Start", func(t testing.TB) { Start(t) }},
		{"StartCluster", func(t testing.TB) { StartCluster(t, 3) }},
	}
	for _, tt := range tests {
		r := &recorder{TB: t}
		func() {
			defer func() {
				if p := recover(); p != nil {
					if _, ok := p.(fatalled); !ok {
						panic(p)
					}
				}
			}()
			tt.start(r)
		}()
		if !strings.Contains(r.fatal, "redis-server is not installed") {
			t.Fatalf("%s without redis-server: Fatalf(%q), want a failure naming the missing redis-server", tt.name, r.fatal)
		}
	}
}

// The proxy forwards every connection, and cuts only the one that sends the
// marker: its request never reaches the server, and the client's other
// connection still answers.
func TestProxyCutsOnlyTheConnectionThatSendsTheMarker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := Start(t)
	p := srv.Proxy(t)
	a := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1})
	defer a.Close()
	b := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1})
	defer b.Close()
	for _, c := range []*redis.Client{a, b} {
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("PING through the proxy: %v", err)
		}
	}
	p.CutOn("poison-marker")
	if err := a.Set(ctx, "poison-marker", "v", 0).Err(); err == nil {
		t.Fatal("SET of the marker through the proxy succeeded, want its connection cut")
	}
	if err := b.Set(ctx, "other", "v", 0).Err(); err != nil {
		t.Fatalf("SET on the other connection: %v", err)
	}
	if n := srv.Client(t).Exists(ctx, "poison-marker").Val(); n != 0 {
		t.Fatal("the cut request reached the server")
	}
	if p.Cut() != 1 {
		t.Fatalf("Cut() = %d, want 1", p.Cut())
	}
}

// CutReplyOn lets the request reach the server and cuts its connection as
// the reply comes back: the client gets an error, the server ran the
// request; it cuts once, so the same request sent again is answered.
func TestProxyCutReplyOnDropsTheReplyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := Start(t)
	p := srv.Proxy(t)
	a := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1})
	defer a.Close()
	if err := a.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING through the proxy: %v", err)
	}
	p.CutReplyOn("lost-reply")
	if err := a.Incr(ctx, "lost-reply").Err(); err == nil {
		t.Fatal("INCR of the marker through the proxy succeeded, want its reply cut")
	}
	if got := srv.Client(t).Get(ctx, "lost-reply").Val(); got != "1" {
		t.Fatalf("after the cut reply the server holds %q, want the request run once: 1", got)
	}
	if n, err := a.Incr(ctx, "lost-reply").Result(); err != nil || n != 2 {
		t.Fatalf("INCR sent again = %d, %v; want 2: the proxy cuts one connection only", n, err)
	}
	if p.Cut() != 1 {
		t.Fatalf("Cut() = %d, want 1", p.Cut())
	}
}

// A marker split between two reads of the proxy (the client wrote it in two
// parts) is found all the same, and the part that completes it is not
// forwarded.
func TestProxyFindsAMarkerSplitBetweenReads(t *testing.T) {
	t.Parallel()
	srv := Start(t)
	p := srv.Proxy(t)
	p.CutOn("poison-marker")
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "*3\r\n$3\r\nSET\r\n$13\r\npoison-")
	time.Sleep(100 * time.Millisecond) // read by the proxy on its own
	io.WriteString(c, "marker\r\n$1\r\nv\r\n")
	if b, err := io.ReadAll(c); len(b) != 0 || err != nil {
		t.Fatalf("read %q, %v; want the connection cut (an end of file)", b, err)
	}
	if n := srv.Client(t).Exists(context.Background(), "poison-marker").Val(); n != 0 {
		t.Fatal("the cut request reached the server")
	}
	if p.Cut() != 1 {
		t.Fatalf("Cut() = %d, want 1", p.Cut())
	}
}

// Delay holds each request for the given time, as a distant server would.
func TestProxyDelayHoldsEachRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := Start(t)
	p := srv.Proxy(t)
	c := redis.NewClient(&redis.Options{Addr: p.Addr})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const d = 150 * time.Millisecond
	p.Delay(d)
	start := time.Now()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < d {
		t.Fatalf("a PING through a proxy delaying %v took %v", d, took)
	}
}
