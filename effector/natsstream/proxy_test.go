package natsstream_test

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// proxy forwards TCP connections to a server, and can fail them as a
// stalled or slow client would: while paused it moves no bytes either way
// (a consumer whose process or network stalled), and once holdNextFetch is
// called it holds back the next client write that carries a pull request (a
// fetch whose answer is late).
type proxy struct {
	ln     net.Listener
	paused atomic.Bool
	hold   atomic.Int64  // holdNextFetch's duration, 0 for none
	done   chan struct{} // closed at the test's end: no more holding back
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, done: make(chan struct{})}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			p.wg.Go(func() { p.pipe(s, c, true) })
			p.wg.Go(func() { p.pipe(c, s, false) })
		}
	})
	t.Cleanup(func() {
		close(p.done)
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// holdNextFetch makes the proxy hold the next fetch the client sends for d
// before forwarding it.
func (p *proxy) holdNextFetch(d time.Duration) { p.hold.Store(int64(d)) }

// wait waits for d, or until the test ends; it reports whether it ended.
func (p *proxy) wait(d time.Duration) bool {
	select {
	case <-time.After(d):
		return false
	case <-p.done:
		return true
	}
}

func (p *proxy) pipe(dst, src net.Conn, fromClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for p.paused.Load() {
			if p.wait(5 * time.Millisecond) {
				return
			}
		}
		if fromClient && bytes.Contains(buf[:n], []byte("CONSUMER.MSG.NEXT")) {
			if d := time.Duration(p.hold.Swap(0)); d > 0 {
				p.wait(d)
			}
		}
		if n > 0 {
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

func (p *proxy) url() string { return "nats://" + p.ln.Addr().String() }
