package natstest

import (
	"testing"

	"github.com/beam-agents/toolreg/internal/faultproxy"
)

// Hook and Conn are faultproxy's, so that a test hooks a proxy through
// natstest alone.
type (
	Hook = faultproxy.Hook
	Conn = faultproxy.Conn
)

// Proxy forwards a NATS client's connections to a server through a hook
// (see package faultproxy).
type Proxy struct{ *faultproxy.Proxy }

// StartProxy starts a proxy to target (host:port) until the test ends.
func StartProxy(t testing.TB, target string, hook Hook) *Proxy {
	t.Helper()
	return &Proxy{faultproxy.Start(t, target, hook)}
}

// URL is the proxy's address as a NATS URL.
func (p *Proxy) URL() string { return "nats://" + p.Addr() }
