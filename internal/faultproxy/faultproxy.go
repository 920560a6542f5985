// Package faultproxy is a TCP proxy for tests that fail a connection as a
// network or a stalled process would: it shows each chunk it reads, from
// the client or from the server, to a hook first, which may hold it back,
// drop what the server sends, or cut the connection. internal/redistest and
// internal/natstest build their servers' proxies on it.
package faultproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards a client's TCP connections to a server, showing each chunk
// it reads to a hook first, so that a test can fail the connection as a
// network or a stalled process would: hold bytes back (the hook blocks),
// drop what the server sends (Conn.Mute), or cut it (Conn.Close).
type Proxy struct {
	ln   net.Listener
	hook Hook
	done chan struct{} // closed at the test's end: nothing is held back
	wg   sync.WaitGroup

	mu     sync.Mutex
	closed bool               // the test ended: a connection accepted since is closed at once
	conns  map[*Conn]struct{} // open connections, for the test's end to cut
}

// Hook sees each chunk a Conn reads, from the client or from the server,
// before it is forwarded (unless the Conn is muted). It may block, with
// Conn.Wait, to hold the chunk and what follows it in that direction back.
type Hook func(c *Conn, fromClient bool, b []byte)

// Conn is one proxied connection: the client's and the server's side.
type Conn struct {
	p              *Proxy
	client, server net.Conn
	muted          atomic.Bool
	// State is the hook's, for what it keeps of the connection between
	// chunks; the hook guards it (the two directions run at once).
	State any
}

// Start listens on a loopback port and forwards each connection to target
// through hook (nil forwards everything) until the test ends.
func Start(t testing.TB, target string, hook Hook) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("faultproxy: %v", err)
	}
	p := &Proxy{ln: ln, hook: hook, done: make(chan struct{}), conns: map[*Conn]struct{}{}}
	p.wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				t.Logf("faultproxy: dialing %s: %v; the client's connection is closed", target, err)
				client.Close()
				continue
			}
			c := &Conn{p: p, client: client, server: server}
			p.mu.Lock()
			if p.closed { // accepted as the test ended, after its connections were cut
				p.mu.Unlock()
				c.Close()
				return
			}
			p.conns[c] = struct{}{}
			p.mu.Unlock()
			p.wg.Go(func() {
				var up sync.WaitGroup
				up.Go(func() { c.pipe(server, client, true) })
				c.pipe(client, server, false)
				up.Wait()
				c.Close()
				p.mu.Lock()
				delete(p.conns, c)
				p.mu.Unlock()
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		p.closed = true
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		// Hooks held in Wait are released only now that the connections
		// are cut, so a chunk one held back goes nowhere: released first,
		// it could reach the server and its answer the client before the
		// cut.
		close(p.done)
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's host:port, for the client to connect to instead of
// the server's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Mute drops everything the server sends on c from now on: the client's
// requests reach the server, and their answers are lost.
func (c *Conn) Mute() { c.muted.Store(true) }

// Close cuts c both ways; the client sees its connection drop.
func (c *Conn) Close() {
	c.client.Close()
	c.server.Close()
}

// Wait waits for d, or until the test ends; it reports whether it ended.
func (c *Conn) Wait(d time.Duration) bool {
	select {
	case <-time.After(d):
		return false
	case <-c.p.done:
		return true
	}
}

func (c *Conn) pipe(dst, src net.Conn, fromClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && c.p.hook != nil {
			c.p.hook(c, fromClient, buf[:n])
		}
		if n > 0 && (fromClient || !c.muted.Load()) {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}
