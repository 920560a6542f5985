package mcpserver_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/mcpserver"
)

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// authedHTTP serves f over streamable HTTP behind the SDK's bearer-token
// middleware, whose tokens are their users' names, and returns a function
// that connects a session as a user.
func authedHTTP(t *testing.T, f *fixture) func(user string) *mcp.ClientSession {
	t.Helper()
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token == "" {
			return nil, errors.New("no token")
		}
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	hs := httptest.NewServer(auth.RequireBearerToken(verify, nil)(f.srv.Handler(nil)))
	t.Cleanup(hs.Close)
	return func(user string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "test-" + user, Version: "v0"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint: hs.URL, HTTPClient: &http.Client{Transport: bearer{user, http.DefaultTransport}},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
}

func TestAnIdempotencyKeyIsScopedToTheAuthenticatedCaller(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	connect := authedHTTP(t, f)
	alice, bob := connect("alice"), connect("bob")

	a := callCharge(t, alice, "order-1", map[string]any{"amount": 10})
	b := callCharge(t, bob, "order-1", map[string]any{"amount": 10})
	if a.IsError || b.IsError {
		t.Fatalf("alice %s, bob %s; want two OK results", marshal(t, a), marshal(t, b))
	}
	if n := f.charges.Load(); n != 2 {
		t.Fatalf("two callers with the same key: charge ran %d times, want 2: bob must not read alice's result", n)
	}
	if text(t, a) == text(t, b) {
		t.Fatalf("bob got alice's result %s", text(t, a))
	}
	// Each caller's retry, on a new session, reads its own result.
	again := callCharge(t, connect("alice"), "order-1", map[string]any{"amount": 10})
	if text(t, again) != text(t, a) || f.charges.Load() != 2 {
		t.Fatalf("alice's retry on a new session = %s (charges %d), want her first result %s", text(t, again), f.charges.Load(), text(t, a))
	}
}

func TestAnIdempotencyKeyReusedWithOtherArgumentsIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	connect := authedHTTP(t, f)
	alice := connect("alice")
	first := callCharge(t, alice, "order-2", map[string]any{"amount": 10})
	if first.IsError {
		t.Fatalf("first call: %s", marshal(t, first))
	}
	// The same key, from another session of the same caller, with another amount.
	other := callCharge(t, connect("alice"), "order-2", map[string]any{"amount": 5000})
	msg := text(t, other)
	if !other.IsError || !strings.Contains(msg, "order-2") || !strings.Contains(msg, "other arguments") || !strings.Contains(msg, "fresh key") {
		t.Fatalf("the key reused with other arguments = %s, want an isError result saying the key was used for other arguments", marshal(t, other))
	}
	if strings.Contains(msg, "charge_id") {
		t.Fatalf("the refusal carries the first call's result: %s", msg)
	}
	if n := f.charges.Load(); n != 1 {
		t.Fatalf("charge ran %d times, want 1", n)
	}
}

func TestWithPrincipalScopesKeysWhereTheTransportHasNoIdentity(t *testing.T) {
	t.Parallel()
	f := newFixture(t, mcpserver.WithPrincipal(func(req mcp.Request) *toolreg.Principal {
		tenant, _ := req.GetParams().GetMeta()["tenant"].(string)
		return &toolreg.Principal{Subject: tenant}
	}))
	cs := f.client(t)
	call := func(tenant string) *mcp.CallToolResult {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "charge", Arguments: map[string]any{"amount": 1},
			Meta: mcp.Meta{mcpserver.MetaIdempotencyKey: "k", "tenant": tenant}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	call("t1")
	call("t2")
	call("t1")
	if n := f.charges.Load(); n != 2 {
		t.Fatalf("one key from two principals, one retried: charge ran %d times, want 2", n)
	}
}
