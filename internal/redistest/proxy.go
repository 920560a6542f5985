package redistest

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
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

	mu         sync.Mutex
	cutOn      []byte // CutOn's string, nil for none
	cutReplyOn []byte // CutReplyOn's string, nil for none
	cut        int    // connections cut so far
	delay      time.Duration
	conns      []net.Conn // every connection, both sides, closed at cleanup
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

// CutReplyOn makes the proxy forward the next request that holds marker
// to the server, and then cut that connection, on both sides, as the server's
// replies come back, dropping them: the server has run the request, and the
// client reads an end of file where its replies should be, as when a
// connection fails after a request is sent. It cuts one connection only:
// a client that sends the request again, on a new connection, gets its
// replies.
func (p *Proxy) CutReplyOn(marker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutReplyOn = []byte(marker)
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
		var dropReplies atomic.Bool
		go p.reply(c, srv, &dropReplies)
		go p.forward(c, srv, &dropReplies)
	}
}

// reply copies what the server sends back to the client, until forward has
// sent a CutReplyOn request: then it closes both instead.
func (p *Proxy) reply(c, srv net.Conn, drop *atomic.Bool) {
	defer c.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := srv.Read(buf)
		if n > 0 {
			if drop.Load() {
				p.mu.Lock()
				p.cut++
				p.mu.Unlock()
				srv.Close()
				return
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// forward copies what the client sends to the server, unless it holds the
// marker: then it closes both. The last bytes of each read are kept, so a
// marker split between two reads is found too.
func (p *Proxy) forward(c, srv net.Conn, dropReplies *atomic.Bool) {
	defer srv.Close()
	buf := make([]byte, 64<<10)
	var tail []byte
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.mu.Lock()
			marker, replyMarker, delay := p.cutOn, p.cutReplyOn, p.delay
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
			if replyMarker != nil && bytes.Contains(seen, replyMarker) {
				p.mu.Lock()
				if bytes.Equal(p.cutReplyOn, replyMarker) { // the first connection to send it
					p.cutReplyOn = nil
					dropReplies.Store(true)
				}
				p.mu.Unlock()
			}
			if _, werr := srv.Write(buf[:n]); werr != nil {
				c.Close()
				return
			}
			if keep := max(len(marker), len(replyMarker)); keep > 0 {
				tail = append(tail[:0:0], seen[max(0, len(seen)-keep+1):]...)
			}
		}
		if err != nil {
			return
		}
	}
}
