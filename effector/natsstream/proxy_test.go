package natsstream_test

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/internal/natstest"
)

// proxy forwards TCP connections to a server, and can fail them as a
// stalled or slow client would: while paused it moves no bytes either way
// (a consumer whose process or network stalled), and once holdNextFetch is
// called it holds back the next client write that carries a pull request (a
// fetch whose answer is late).
type proxy struct {
	*natstest.Proxy
	paused atomic.Bool
	hold   atomic.Int64 // holdNextFetch's duration, 0 for none
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	p := &proxy{}
	p.Proxy = natstest.StartProxy(t, target, func(c *natstest.Conn, fromClient bool, b []byte) {
		for p.paused.Load() {
			if c.Wait(5 * time.Millisecond) {
				return
			}
		}
		if fromClient && bytes.Contains(b, []byte("CONSUMER.MSG.NEXT")) {
			if d := time.Duration(p.hold.Swap(0)); d > 0 {
				c.Wait(d)
			}
		}
	})
	return p
}

// holdNextFetch makes the proxy hold the next fetch the client sends for d
// before forwarding it.
func (p *proxy) holdNextFetch(d time.Duration) { p.hold.Store(int64(d)) }
