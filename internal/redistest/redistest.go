package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server child process owned by one test.
type Server struct {
	// Addr is host:port of the server; it stays the same across Restart.
	Addr string

	bin     string
	dir     string
	durable bool
	cluster bool   // a Redis Cluster node, see StartCluster
	busPort string // the node's cluster bus port

	mu   sync.Mutex
	cmd  *exec.Cmd
	exit chan struct{}
	log  *bytes.Buffer
}

// Option configures Start.
type Option func(*Server)

// WithDurability turns on the append-only file with appendfsync always, so
// every acknowledged write is on disk before the reply and survives Restart
// (which kills the server with SIGKILL). Default: no persistence at all (no
// RDB snapshots, no AOF), so a restart empties the server.
func WithDurability() Option {
	return func(s *Server) { s.durable = true }
}

// clusterNode makes the server a Redis Cluster node with a bus port of its
// own; StartCluster joins such nodes.
func clusterNode() Option {
	return func(s *Server) { s.cluster = true }
}

// Start starts redis-server on a free 127.0.0.1 port and waits until it answers
// PING. The server is killed when the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{bin: redisServer(t), dir: t.TempDir()}
	for _, o := range opts {
		o(s)
	}
	t.Cleanup(func() { s.kill() })
	s.launch(t)
	return s
}

// redisServer returns the path of redis-server, failing t if it is missing.
func redisServer(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redistest: redis-server is not installed (%v); install the Debian package redis-server (.ci/run does)", err)
	}
	return bin
}

// launch starts s on free ports. Another process may take a port between our
// probe and redis binding it; try a few ports before giving up.
func (s *Server) launch(t testing.TB) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: finding a free port: %v", err)
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if s.cluster {
			bus, err := freePort()
			if err != nil {
				t.Fatalf("redistest: finding a free port: %v", err)
			}
			s.busPort = strconv.Itoa(bus)
		}
		err = s.start()
		if err == nil {
			return
		}
		if attempt == 4 {
			t.Fatalf("redistest: %v", err)
		}
	}
}

// Restart kills the server with SIGKILL, as a crash would, and starts a new
// one on the same port with the same data directory. Only what the server had
// made durable survives: everything with WithDurability, nothing without.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.kill()
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		// The old socket may linger for a moment after the kill.
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("redistest: restarting: %v", err)
}

// Stop kills the server and waits for it to exit; Restart starts it again.
// Tests use it to see how clients behave while the server is down.
func (s *Server) Stop() { s.kill() }

// Client returns a go-redis client for the server, closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { c.Close() })
	return c
}

func (s *Server) start() error {
	_, port, _ := net.SplitHostPort(s.Addr)
	args := []string{
		"--port", port,
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--daemonize", "no",
		"--logfile", "",
	}
	if s.cluster {
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(s.dir, "nodes.conf"),
			"--cluster-port", s.busPort)
	}
	if s.durable {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	cmd := exec.Command(s.bin, args...)
	log := new(bytes.Buffer)
	cmd.Stdout = log
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.bin, err)
	}
	exit := make(chan struct{})
	go func() { cmd.Wait(); close(exit) }()
	s.mu.Lock()
	s.cmd, s.exit, s.log = cmd, exit, log
	s.mu.Unlock()

	if err := s.waitReady(exit); err != nil {
		s.kill()
		return fmt.Errorf("redis-server on %s: %w\n%s", s.Addr, err, log.String())
	}
	return nil
}

// waitReady polls PING until the server answers PONG (not LOADING, while it
// replays its append-only file), it exits, or 10s pass.
func (s *Server) waitReady(exit <-chan struct{}) error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		select {
		case <-exit:
			return errors.New("exited before answering PING")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no PONG within 10s: %v", err)
}

func (s *Server) kill() {
	s.mu.Lock()
	cmd, exit := s.cmd, s.exit
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(os.Kill)
	<-exit
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
