package redistest

import (
	"context"
	"strings"
	"testing"
	"time"
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
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(fatalled); !ok {
					panic(p)
				}
			}
		}()
		Start(r)
	}()
	if !strings.Contains(r.fatal, "redis-server is not installed") {
		t.Fatalf("Start without redis-server: Fatalf(%q), want a failure naming the missing redis-server", r.fatal)
	}
}
