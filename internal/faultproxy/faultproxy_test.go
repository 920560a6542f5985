package faultproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer writes back each line it reads, and keeps what it read.
type echoServer struct {
	addr string
	mu   sync.Mutex
	got  strings.Builder
}

func (e *echoServer) received() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.got.String()
}

func echo(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	e := &echoServer{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					e.mu.Lock()
					e.got.WriteString(line)
					e.mu.Unlock()
					if err != nil {
						return
					}
					io.WriteString(c, line)
				}
			}()
		}
	}()
	return e
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return c, bufio.NewReader(c)
}

func TestProxy(t *testing.T) {
	t.Parallel()
	srv := echo(t)
	var seen atomic.Int64
	p := Start(t, srv.addr, func(c *Conn, fromClient bool, b []byte) {
		seen.Add(int64(len(b)))
		switch {
		case fromClient && strings.Contains(string(b), "mute"):
			c.Mute()
		case fromClient && strings.Contains(string(b), "cut"):
			c.Close()
		}
	})

	// Forwarded both ways, each chunk shown to the hook first.
	c, r := dial(t, p.Addr())
	io.WriteString(c, "hello\n")
	if line, err := r.ReadString('\n'); line != "hello\n" || err != nil {
		t.Fatalf("read %q, %v; want the echo", line, err)
	}
	if got := seen.Load(); got != 12 {
		t.Errorf("the hook saw %d bytes, want 12 (6 each way)", got)
	}

	// Muted: the request reaches the server, its answer is dropped, and the
	// connection stays open (the client waits, as for a lost answer).
	c, r = dial(t, p.Addr())
	io.WriteString(c, "mute\n")
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if line, err := r.ReadString('\n'); line != "" || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a muted connection read %q, %v; want nothing until the deadline", line, err)
	}
	if got := srv.received(); !strings.Contains(got, "mute\n") {
		t.Errorf("the server received %q; want the muted connection's request", got)
	}

	// Cut: the client reads an end of file, and the server never sees the
	// request that cut it.
	c, r = dial(t, p.Addr())
	io.WriteString(c, "cut\n")
	if line, err := r.ReadString('\n'); line != "" || err != io.EOF {
		t.Errorf("a cut connection read %q, %v; want EOF", line, err)
	}
	if got := srv.received(); strings.Contains(got, "cut") {
		t.Errorf("the server received %q; want nothing of the request that cut", got)
	}
}

// A hook holding a chunk back (Conn.Wait) holds that direction back, and
// the test's end releases it and closes the connections still open: the
// cleanup returns at once.
func TestProxyWaitHoldsBackUntilTheTestEnds(t *testing.T) {
	t.Parallel()
	srv := echo(t)
	released := make(chan bool, 1)
	var c net.Conn
	var r *bufio.Reader
	outer := t
	t.Run("held", func(t *testing.T) {
		p := Start(t, srv.addr, func(c *Conn, fromClient bool, b []byte) {
			if fromClient {
				released <- c.Wait(time.Hour)
			}
		})
		c, r = dial(outer, p.Addr()) // the client outlives the proxy
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "held\n")
		time.Sleep(100 * time.Millisecond)
		if got := srv.received(); got != "" {
			t.Errorf("the server received %q while the hook held it back", got)
		}
	}) // the subtest's cleanup ends the proxy; it must not wait an hour
	select {
	case ended := <-released:
		if !ended {
			t.Error("Wait reported its duration passed; want the test's end")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the hook was still held after the proxy's test ended")
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Error("the client's connection is still open after the proxy's test ended")
	}
}
