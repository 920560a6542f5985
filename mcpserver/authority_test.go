package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/internal/mcpjstest"
	"github.com/beam-agents/toolreg/internal/oauthtest"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/mcpserver"
	"github.com/beam-agents/toolreg/mcpserver/jwtauth"
)

const scopedManifests = `
name: read_order
description: Read an order.
scopes: [orders:read]
params:
  order_id: {type: string}
---
name: refund_order
description: Refund an order.
side_effect: true
scopes: [orders:read, orders:refund]
params:
  order_id: {type: string}
---
name: ping
description: Anyone may ping.
`

type orderArgs struct {
	OrderID string `json:"order_id"`
}

// scopedServer serves the tools above; reads and refunds count their runs,
// and refunds record the principal their intent carried.
type scopedServer struct {
	srv            *mcpserver.Server
	store          *effector.MemoryStore
	reads, refunds atomic.Int64
	refundedBy     atomic.Value // string
}

func newScopedServer(t testing.TB, opts ...mcpserver.Option) *scopedServer {
	t.Helper()
	specs, err := loader.LoadFS(fstest.MapFS{"tools.yaml": {Data: []byte(scopedManifests)}}, "tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := &scopedServer{store: effector.NewMemoryStore()}
	b := bindings.New(specs)
	bindings.ReadOnly(b, "read_order", func(context.Context, orderArgs) (string, error) { s.reads.Add(1); return "shipped", nil })
	bindings.Effect(b, "refund_order", func(ctx context.Context, a orderArgs) (string, error) {
		s.refunds.Add(1)
		if info, ok := effector.IntentFrom(ctx); ok && info.Principal != nil {
			s.refundedBy.Store(info.Principal.Subject)
		}
		return "refunded", nil
	})
	bindings.ReadOnly(b, "ping", func(context.Context, struct{}) (string, error) { return "pong", nil })
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	eff, err := effector.New(bound.Effector, s.store)
	if err != nil {
		t.Fatal(err)
	}
	s.srv, err = mcpserver.New(bound, eff, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *scopedServer) client(t testing.TB) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

func listed(t testing.TB, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

func callOrder(t testing.TB, cs *mcp.ClientSession, name string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"order_id": "o-1"}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Over stdio (here, in memory) the principal is the server's configuration:
// a caller is listed only the tools it may call, and a call of another is
// an isError result naming the scope, with nothing run or staged.
func TestTheConfiguredCallerIsListedAndCallsOnlyWhatItMayCall(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		opts    []mcpserver.Option
		listed  string
		refused []string
	}{
		{"no caller", nil, "ping", []string{"read_order", "refund_order"}},
		{"a reader", []mcpserver.Option{mcpserver.WithCaller(toolreg.Principal{Subject: "ana", Scopes: []string{"orders:read"}})},
			"ping,read_order", []string{"refund_order"}},
		{"a refunder", []mcpserver.Option{mcpserver.WithCaller(toolreg.Principal{Subject: "bo", Scopes: []string{"orders:read", "orders:refund"}})},
			"ping,read_order,refund_order", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newScopedServer(t, c.opts...)
			cs := s.client(t)
			if got := listed(t, cs); got != c.listed {
				t.Fatalf("tools/list = %s, want %s", got, c.listed)
			}
			for _, name := range c.refused {
				res := callOrder(t, cs, name)
				if !res.IsError || !strings.Contains(text(t, res), "orders:") || !strings.Contains(text(t, res), "was not run") {
					t.Fatalf("calling %s: %s; want an isError result naming the scope", name, marshal(t, res))
				}
			}
			if len(c.refused) > 0 && s.reads.Load()+s.refunds.Load() != 0 {
				t.Fatalf("refused calls ran: %d reads, %d refunds", s.reads.Load(), s.refunds.Load())
			}
			if c.refused == nil {
				if res := callOrder(t, cs, "refund_order"); res.IsError || s.refundedBy.Load() != "bo" {
					t.Fatalf("the refunder's refund: %s, ran as %v", marshal(t, res), s.refundedBy.Load())
				}
			}
		})
	}
}

// Two clients without identity that send the same idempotency key each get
// their own call: neither reads the other's result (the gap the package doc
// once named is closed). A client's retry on its session is answered once.
func TestClientsWithoutIdentityDoNotShareIdempotencyKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, b := f.client(t), f.client(t)
	first := callCharge(t, a, "shared-key", map[string]any{"amount": 7})
	other := callCharge(t, b, "shared-key", map[string]any{"amount": 7})
	again := callCharge(t, a, "shared-key", map[string]any{"amount": 7})
	if first.IsError || other.IsError || f.charges.Load() != 2 {
		t.Fatalf("charges %d (first %s, other %s); want each client's call run once", f.charges.Load(), marshal(t, first), marshal(t, other))
	}
	if text(t, first) == text(t, other) || text(t, again) != text(t, first) {
		t.Fatalf("first %s, other %s, retry %s: the other client read the first's result, or the retry ran again", text(t, first), text(t, other), text(t, again))
	}
}

// A stateless HTTP request without identity has nothing to scope a key to:
// it is refused, saying so, rather than shared with every client.
func TestAKeyWithNeitherPrincipalNorSessionIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	hs := httptest.NewServer(f.srv.Handler(&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res := callCharge(t, cs, "k", map[string]any{"amount": 1})
	if !res.IsError || !strings.Contains(text(t, res), "needs a caller") || f.charges.Load() != 0 {
		t.Fatalf("a keyed call without identity nor session: %s, %d charges", marshal(t, res), f.charges.Load())
	}
}

// authServer serves s over streamable HTTP behind WithAuth with tokens of
// iss, and its protected-resource metadata at the well-known path.
func authServer(t *testing.T, iss *oauthtest.Issuer) (*scopedServer, string) {
	t.Helper()
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	resource := hs.URL + "/mcp"
	v, err := jwtauth.New(context.Background(), jwtauth.Config{Issuer: iss.URL, Audience: resource, JWKSURL: iss.JWKSURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	s := newScopedServer(t, mcpserver.WithAuth(mcpserver.Auth{Verifier: v.Verify, Resource: resource, AuthorizationServers: []string{iss.URL}}))
	mux.Handle("/mcp", s.srv.Handler(nil))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", s.srv.MetadataHandler())
	return s, resource
}

func connectWith(t *testing.T, endpoint, token string) (*mcp.ClientSession, error) {
	t.Helper()
	httpc := &http.Client{Transport: bearer{token, http.DefaultTransport}}
	if token == "" {
		httpc = http.DefaultClient
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: httpc}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// post sends one JSON-RPC request as a client would, and returns the
// response (its body read).
func post(t *testing.T, endpoint, token, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const initializeRequest = `{"jsonrpc":"2.0","id":1,"method":"initializeRequest","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// Over streamable HTTP the real Go SDK client authenticates with tokens of
// a real issuer: each hostile token is refused 401 with its own reason; a
// token with the scopes lists and calls the tools, and its intent carries
// its subject; one without is not listed the tool, and a call of it is
// answered 403 insufficient_scope naming the scopes, with nothing run.
func TestStreamableHTTPAuthenticatesAndChecksScopesPerTool(t *testing.T) {
	t.Parallel()
	iss := oauthtest.Start(t)
	s, resource := authServer(t, iss)
	metadataURL := strings.TrimSuffix(resource, "/mcp") + "/.well-known/oauth-protected-resource/mcp"

	resp, _ := post(t, resource, "", initializeRequest)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+metadataURL+`"`) {
		t.Fatalf("no token: %d, WWW-Authenticate %q; want 401 naming the metadata", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	good := func() map[string]any { return iss.Claims("ana", resource, "orders:read", "orders:refund") }
	with := func(k string, v any) map[string]any { c := good(); c[k] = v; return c }
	for _, c := range []struct{ name, token, reason string }{
		{"expired", iss.Token(t, with("exp", 1)), "expired"},
		{"another audience", iss.Token(t, with("aud", "https://other.example.test/mcp")), "not for this resource"},
		{"another issuer", iss.Token(t, with("iss", "https://evil.example.test")), "another issuer"},
		{"alg none", iss.NoneToken(t, good()), "algorithm"},
		{"HMAC with the public key", iss.PublicKeyHMACToken(t, good()), "algorithm"},
	} {
		resp, body := post(t, resource, c.token, initializeRequest)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, c.reason) {
			t.Errorf("%s: %d %q; want 401 saying %q", c.name, resp.StatusCode, body, c.reason)
		}
		if _, err := connectWith(t, resource, c.token); err == nil {
			t.Errorf("%s: the Go SDK client connected", c.name)
		}
	}

	refunder, err := connectWith(t, resource, iss.Token(t, good()))
	if err != nil {
		t.Fatal(err)
	}
	if got := listed(t, refunder); got != "ping,read_order,refund_order" {
		t.Fatalf("the refunder is listed %s", got)
	}
	if res := callOrder(t, refunder, "refund_order"); res.IsError || s.refundedBy.Load() != "ana" {
		t.Fatalf("the refunder's refund: %s, its intent's principal %v", marshal(t, res), s.refundedBy.Load())
	}

	other := func(k string, v any) map[string]any {
		c := iss.Claims("cy", resource)
		c[k] = v
		return c
	}
	for name, claims := range map[string]map[string]any{
		"a reader":                 iss.Claims("bo", resource, "orders:read"),
		"the scopes in scp":        other("scp", []string{"orders:read", "orders:refund"}),
		"the scopes in roles":      other("roles", "orders:read orders:refund"),
		"the scopes in scope_list": other("scope_list", "orders:read orders:refund"),
	} {
		token := iss.Token(t, claims)
		cs, err := connectWith(t, resource, token)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := listed(t, cs); strings.Contains(got, "refund_order") {
			t.Errorf("%s is listed %s", name, got)
		}
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "refund_order", Arguments: map[string]any{"order_id": "o-1"}}); err == nil {
			t.Errorf("%s: the Go SDK client's call of refund_order succeeded", name)
		}
		resp, body := post(t, resource, token, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"refund_order","arguments":{"order_id":"o-1"}}}`)
		h := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(h, `error="insufficient_scope"`) ||
			!strings.Contains(h, `scope="orders:read orders:refund"`) || !strings.Contains(h, `resource_metadata="`+metadataURL+`"`) ||
			!strings.Contains(body, "orders:refund") {
			t.Errorf("%s calling refund_order: %d, WWW-Authenticate %q, body %q; want 403 insufficient_scope naming the scopes", name, resp.StatusCode, h, body)
		}
	}
	if n := s.refunds.Load(); n != 1 {
		t.Fatalf("refund_order ran %d times, want once (the refunder's)", n)
	}

	get, err := http.Get(metadataURL)
	if err != nil {
		t.Fatal(err)
	}
	defer get.Body.Close()
	var md oauthex.ProtectedResourceMetadata
	if err := json.NewDecoder(get.Body).Decode(&md); err != nil {
		t.Fatal(err)
	}
	if md.Resource != resource || !slices.Equal(md.AuthorizationServers, []string{iss.URL}) ||
		!slices.Equal(md.ScopesSupported, []string{"orders:read", "orders:refund"}) || !slices.Equal(md.BearerMethodsSupported, []string{"header"}) {
		t.Fatalf("protected-resource metadata %+v", md)
	}
	var buf bytes.Buffer
	json.NewEncoder(&buf).Encode(md)
	if !strings.Contains(buf.String(), `"scopes_supported":["orders:read","orders:refund"]`) {
		t.Fatalf("metadata JSON %s", buf.String())
	}
}

// Behind WithAuth with scoped tools, the body goes through the scope check
// before the stamp: a batch, or a request with bytes after its JSON, is
// refused as without WithAuth (400, -32600 or -32700), whatever the token's
// scopes, and runs nothing. The scope check decoded a batch into the body's
// own bytes, so the stamp saw its first element alone and a batch of calls
// ran, unstamped; and it answered 403 insufficient_scope for a batch that
// would be refused anyway.
func TestWithAuthWhatCannotBeStampedIsRefusedAsWithout(t *testing.T) {
	t.Parallel()
	iss := oauthtest.Start(t)
	s, resource := authServer(t, iss)
	refunder := iss.Token(t, iss.Claims("ana", resource, "orders:read", "orders:refund"))
	reader := iss.Token(t, iss.Claims("bo", resource, "orders:read"))
	refund := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"refund_order","arguments":{"order_id":"o-` + id + `"}}}`
	}
	for _, tt := range []struct {
		name, token, body, code string
	}{
		{"a batch of calls", refunder, "[" + refund("20") + "," + refund("21") + "]", "-32600"},
		{"a batch, from a token without the scope", reader, "[" + refund("22") + "]", "-32600"},
		{"a batch with a fractional id", refunder, "[" + refund("7.25") + "]", "-32600"},
		{"bytes after the JSON", refunder, refund("7.25") + " x", "-32700"},
	} {
		resp, body := post(t, resource, tt.token, tt.body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"code":`+tt.code) {
			t.Errorf("%s: %d %s; want 400 with JSON-RPC error %s", tt.name, resp.StatusCode, body, tt.code)
		}
	}
	if n := s.refunds.Load(); n != 0 {
		t.Errorf("refund_order ran %d times for requests refused", n)
	}
}

// The TypeScript MCP SDK's client, over streamable HTTP with tokens of a
// real issuer: with the scopes it lists and calls the tool; without them
// the tool is not listed and its call fails with the server's 403; with no
// token, or a hostile one, it cannot connect.
func TestTheTypeScriptSDKClientAuthenticatesOverStreamableHTTP(t *testing.T) {
	t.Parallel()
	node := mcpjstest.Node(t)
	iss := oauthtest.Start(t)
	s, resource := authServer(t, iss)
	calls := `[{"name":"refund_order","arguments":{"order_id":"o-ts"}}]`
	type outcome struct {
		Connected bool     `json:"connected"`
		Error     string   `json:"error"`
		Tools     []string `json:"tools"`
		Calls     []struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
			Error   string `json:"error"`
			Code    int    `json:"code"`
		} `json:"calls"`
	}
	run := func(token string) outcome {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, filepath.Join(mcpjs, "http.mjs"), resource, token, calls)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("node http.mjs: %v\n%s", err, stderr.String())
		}
		var o outcome
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		return o
	}
	o := run(iss.Token(t, iss.Claims("ana", resource, "orders:read", "orders:refund")))
	if !o.Connected || strings.Join(o.Tools, ",") != "ping,read_order,refund_order" || len(o.Calls) != 1 || o.Calls[0].IsError || o.Calls[0].Error != "" {
		t.Fatalf("with the scopes: %+v", o)
	}
	o = run(iss.Token(t, iss.Claims("bo", resource, "orders:read")))
	if !o.Connected || strings.Join(o.Tools, ",") != "ping,read_order" || len(o.Calls) != 1 || o.Calls[0].Code != 403 || !strings.Contains(o.Calls[0].Error, "insufficient_scope") {
		t.Fatalf("without orders:refund: %+v; want the tool unlisted and its call refused 403", o)
	}
	for name, token := range map[string]string{"no token": "", "alg none": iss.NoneToken(t, iss.Claims("eve", resource, "orders:refund", "orders:read"))} {
		if o := run(token); o.Connected {
			t.Fatalf("%s: the client connected: %+v", name, o)
		}
	}
	if n := s.refunds.Load(); n != 1 {
		t.Fatalf("refund_order ran %d times, want 1", n)
	}
}
