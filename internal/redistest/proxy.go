package redistest

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/internal/faultproxy"
)

// Proxy forwards TCP connections to a server, and cuts the one connection
// that sends a given string: tests use it to fail one connection mid-flight
// (its request written, no reply read) while the client's other connections
// carry on. It is a faultproxy.Proxy whose hook looks for the strings.
type Proxy struct {
	// Addr is host:port to connect to instead of the server's.
	Addr string

	mu         sync.Mutex
	cutOn      []byte // CutOn's string, nil for none
	cutReplyOn []byte // CutReplyOn's string, nil for none
	cut        int    // connections cut so far
	delay      time.Duration
}

// proxyConn is what the hook keeps of a connection (in its State, under
// Proxy.mu): the last bytes its client sent, so that a marker split between
// two reads is found, and whether its replies are dropped.
type proxyConn struct {
	tail        []byte
	dropReplies bool
}

// Proxy starts a proxy to s on a free loopback port, closed when the test
// ends.
func (s *Server) Proxy(t testing.TB) *Proxy {
	t.Helper()
	p := &Proxy{}
	p.Addr = faultproxy.Start(t, s.Addr, p.hook).Addr()
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

// hook cuts a connection whose client sends CutOn's marker before the bytes
// are forwarded, and one that sent CutReplyOn's as its replies come back.
func (p *Proxy) hook(c *faultproxy.Conn, fromClient bool, b []byte) {
	p.mu.Lock()
	st, _ := c.State.(*proxyConn)
	if st == nil {
		st = &proxyConn{}
		c.State = st
	}
	if !fromClient {
		if st.dropReplies {
			p.cut++
			p.mu.Unlock()
			c.Close() // the replies are not forwarded
			return
		}
		p.mu.Unlock()
		return
	}
	marker, replyMarker, delay := p.cutOn, p.cutReplyOn, p.delay
	if marker == nil && replyMarker == nil {
		p.mu.Unlock()
		if delay > 0 {
			c.Wait(delay)
		}
		return
	}
	seen := append(st.tail, b...)
	if keep := max(len(marker), len(replyMarker)); keep > 0 {
		st.tail = append(st.tail[:0:0], seen[max(0, len(seen)-keep+1):]...)
	}
	switch {
	case marker != nil && bytes.Contains(seen, marker):
		p.cut++
		p.mu.Unlock()
		c.Close() // the request is not forwarded
		return
	case replyMarker != nil && bytes.Contains(seen, replyMarker):
		p.cutReplyOn = nil // the first connection to send it
		st.dropReplies = true
	}
	p.mu.Unlock()
	if delay > 0 {
		c.Wait(delay) // released at the test's end
	}
}
