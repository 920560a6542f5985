package redistest

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections to a server, and cuts the one connection
// that sends a given string: tests use it to fail one connection mid-flight
// (its request written, no reply read) while the client's other connections
// carry on.
type Proxy struct {
	// Addr is host:port to connect to instead of the server's.
	Addr string

	to string
	ln net.Listener

	mu    sync.Mutex
	cutOn []byte // CutOn's string, nil for none
	cut   int    // connections cut so far
	delay time.Duration
	conns []net.Conn // every connection, both sides, closed at cleanup
}

// Proxy starts a proxy to s on a free loopback port, closed when the test
// ends.
func (s *Server) Proxy(t testing.TB) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: proxy: %v", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), to: s.Addr, ln: ln}
	t.Cleanup(p.close)
	go p.accept()
	return p
}

// CutOn makes the proxy close, on both sides, every connection whose client
// sends marker from now on, before forwarding the bytes that hold it: the
// server never sees that request, and the client reads an end of file.
func (p *Proxy) CutOn(marker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOn = []byte(marker)
}

// Delay makes the proxy hold what each client sends for d before
// forwarding it, as a network with a round trip of d would: benchmarks use
// it to see a store whose server is not on the same host.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// Cut is how many connections the proxy has cut.
func (p *Proxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

func (p *Proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		srv, err := net.Dial("tcp", p.to)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, srv)
		p.mu.Unlock()
		go func() { io.Copy(c, srv); c.Close() }()
		go p.forward(c, srv)
	}
}

// forward copies what the client sends to the server, unless it holds the
// marker: then it closes both. The last bytes of each read are kept, so a
// marker split between two reads is found too.
func (p *Proxy) forward(c, srv net.Conn) {
	defer srv.Close()
	buf := make([]byte, 64<<10)
	var tail []byte
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.mu.Lock()
			marker, delay := p.cutOn, p.delay
			p.mu.Unlock()
			if delay > 0 {
				time.Sleep(delay)
			}
			seen := append(tail, buf[:n]...)
			if marker != nil && bytes.Contains(seen, marker) {
				p.mu.Lock()
				p.cut++
				p.mu.Unlock()
				c.Close()
				return
			}
			if _, werr := srv.Write(buf[:n]); werr != nil {
				c.Close()
				return
			}
			if marker != nil {
				tail = append(tail[:0:0], seen[max(0, len(seen)-len(marker)+1):]...)
			}
		}
		if err != nil {
			return
		}
	}
}
