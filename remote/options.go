package remote

import (
	"io"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// Option configures Connect.
type Option func(*options)

type options struct {
	logger         *slog.Logger
	meter          metric.MeterProvider
	connectTimeout time.Duration
	callTimeout    time.Duration
	maxMessage     int
	maxTools       int
	retryMin       time.Duration
	retryMax       time.Duration
	recheck        time.Duration
}

func defaults() options {
	return options{
		logger:         slog.Default(),
		connectTimeout: 30 * time.Second,
		callTimeout:    60 * time.Second,
		maxMessage:     16 << 20,
		maxTools:       10000,
		retryMin:       250 * time.Millisecond,
		retryMax:       30 * time.Second,
	}
}

// WithLogger sets where the Set logs a tool withdrawn or suspended, a server
// lost or reconnected, and the tools a server serves that no manifest pins.
// The default is slog.Default(); nil discards.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			l = slog.New(slog.NewTextHandler(io.Discard, nil))
		}
		o.logger = l
	}
}

// WithMeterProvider sets the provider of the meter that counts withdrawals
// (MetricWithdrawals). The default is the global provider
// (otel.GetMeterProvider), which records nothing until one is set.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.meter = mp }
}

// WithConnectTimeout bounds connecting to a server and listing its tools, at
// Connect and at each reconnection or re-listing. The default is 30s.
func WithConnectTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.connectTimeout = d
		}
	}
}

// WithCallTimeout bounds one call of a remote tool: with no answer by then it
// fails with a *CallError (for a side-effecting tool, effect unknown). A
// shorter deadline of the caller's context, or the effector's tool timeout,
// ends it sooner. The default is 60s.
func WithCallTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.callTimeout = d
		}
	}
}

// WithMaxMessageBytes bounds one message a server sends (a tools/list page, a
// result): past it the connection is dropped and the rest is never read
// (*MessageTooLargeError). The default is 16 MiB, the MCP Go SDK's own limit
// for stdio.
func WithMaxMessageBytes(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxMessage = n
		}
	}
}

// WithMaxTools bounds how many tools one server may list, over all pages of
// tools/list. The default is 10,000.
func WithMaxTools(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxTools = n
		}
	}
}

// WithReconnect sets the wait before reconnecting to a server that closed
// its connection (or re-listing one that failed to list), doubling from min
// to max. The defaults are 250ms and 30s.
func WithReconnect(min, max time.Duration) Option {
	return func(o *options) {
		if min > 0 {
			o.retryMin = min
		}
		if max >= o.retryMin {
			o.retryMax = max
		}
	}
}

// WithRecheck lists each server's tools again every d, besides when it
// announces a change, and withdraws a tool that drifted: it catches a server
// that changes a tool without announcing it. The default, 0, lists again only
// on tools/list_changed and after a reconnection.
func WithRecheck(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.recheck = d
		}
	}
}
