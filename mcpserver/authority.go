package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/beam-agents/toolreg"
)

// Authority: who calls, and what a tool's manifest says they need.
//
// A call's principal is WithPrincipal's, else the verified bearer token's
// (its subject and scopes: WithAuth), else WithCaller's, else none (the
// anonymous caller, who holds no scope). A tool whose scopes the principal
// lacks is not listed to it, is refused when called (over streamable HTTP
// with WithAuth, with 403 insufficient_scope before the SDK reads the call;
// otherwise with an isError result naming the scope), and, staged for the
// effector, carries the principal in its intent, so the effector checks it
// again.

// WithPrincipal sets how the server finds who calls: principal returns the
// principal of a request (a tools/list or a tools/call), or nil for none.
// It replaces the default, which reads the request's verified bearer token
// (req.GetExtra().TokenInfo: its user id as the subject, its scopes), and
// WithCaller's principal. The principal decides which tools are listed and
// may be called, and scopes idempotency keys (see the package doc).
func WithPrincipal(principal func(req mcp.Request) *toolreg.Principal) Option {
	return func(c *config) { c.principal = principal }
}

// WithCaller sets the principal of every request that carries no verified
// bearer token: over stdio, where the server's configuration says who its
// one client acts for, and over streamable HTTP without WithAuth. The
// default is none: the anonymous caller, which holds no scope, and whose
// idempotency keys are its session's alone.
func WithCaller(p toolreg.Principal) Option {
	return func(c *config) {
		p.Scopes = slices.Clone(p.Scopes)
		c.caller = &p
	}
}

// Auth is how the streamable HTTP handler authenticates its callers with
// OAuth 2.1 bearer tokens, as the MCP authorization specification says.
type Auth struct {
	// Verifier verifies a bearer token and returns what it grants, such as
	// (*jwtauth.Verifier).Verify for JWT access tokens. Required.
	Verifier auth.TokenVerifier
	// Resource is the server's resource identifier: its URL as clients
	// reach it, such as https://mcp.example.com/mcp. Tokens are issued for
	// it (their audience), and the protected-resource metadata names it.
	// Required.
	Resource string
	// AuthorizationServers are the issuers of the tokens the server
	// accepts, for the metadata: clients get tokens from them.
	AuthorizationServers []string
	// MetadataURL is where the protected-resource metadata is served (see
	// Server.MetadataHandler). The default is RFC 9728's well-known URL of
	// Resource: https://mcp.example.com/.well-known/oauth-protected-resource/mcp.
	MetadataURL string
}

// WithAuth makes Handler authenticate every request with a.Verifier behind
// the MCP Go SDK's auth.RequireBearerToken: a request without a valid token
// is answered 401 with a WWW-Authenticate naming the protected-resource
// metadata (serve it with MetadataHandler), and a tools/call of a tool whose
// scopes the token lacks is answered 403 insufficient_scope with a
// WWW-Authenticate naming the scopes it needs. The token's subject and
// scopes are the caller's principal. The default is no authentication.
func WithAuth(a Auth) Option {
	return func(c *config) { c.auth = &a }
}

// principal returns the principal of req, or nil for none; see WithPrincipal.
func (s *Server) principal(req mcp.Request) *toolreg.Principal {
	if s.cfg.principal != nil {
		return s.cfg.principal(req)
	}
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		return &toolreg.Principal{Subject: ex.TokenInfo.UserID, Scopes: ex.TokenInfo.Scopes}
	}
	return s.cfg.caller
}

// subject names the principal of req in idempotency keys and approvals, or
// is "" for a caller with no name.
func (s *Server) subject(req mcp.Request) string {
	if p := s.principal(req); p != nil {
		return p.Subject
	}
	return ""
}

// scoped reports whether a tool of the bound set declares scopes.
func (s *Server) scoped() bool {
	for _, t := range s.bound.Pipeline.Tools() {
		if len(t.Spec().Scopes) > 0 {
			return true
		}
	}
	return false
}

// listAllowed is the receiving middleware that lists to each caller only
// the tools its principal may call.
func (s *Server) listAllowed(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		lr, ok := res.(*mcp.ListToolsResult)
		if method != "tools/list" || err != nil || !ok {
			return res, err
		}
		p := s.principal(req)
		kept := make([]*mcp.Tool, 0, len(lr.Tools))
		for _, mt := range lr.Tools {
			if t, err := s.bound.Pipeline.Get(mt.Name); err != nil || p.Allows(t.Spec()) {
				kept = append(kept, mt)
			}
		}
		out := *lr
		out.Tools = kept
		return &out, nil
	}
}

// metadataURL is where the protected-resource metadata is: a.MetadataURL,
// else the well-known URL of a.Resource (RFC 9728 section 3.1).
func (a *Auth) metadataURL() string {
	if a.MetadataURL != "" {
		return a.MetadataURL
	}
	u, err := url.Parse(a.Resource)
	if err != nil || u.Host == "" {
		return a.Resource
	}
	path := strings.TrimSuffix(u.Path, "/")
	return u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + path
}

// ProtectedResourceMetadata is the server's OAuth 2.0 protected-resource
// metadata (RFC 9728), from WithAuth: its resource, the authorization
// servers, the scopes its tools declare, and that tokens come in the
// Authorization header. Nil without WithAuth.
func (s *Server) ProtectedResourceMetadata() *oauthex.ProtectedResourceMetadata {
	a := s.cfg.auth
	if a == nil {
		return nil
	}
	var scopes []string
	for _, t := range s.bound.Pipeline.Tools() {
		scopes = append(scopes, t.Spec().Scopes...)
	}
	slices.Sort(scopes)
	return &oauthex.ProtectedResourceMetadata{
		Resource: a.Resource, AuthorizationServers: a.AuthorizationServers,
		ScopesSupported: slices.Compact(scopes), BearerMethodsSupported: []string{"header"},
		ResourceName: s.cfg.impl.Name,
	}
}

// MetadataURL is where clients are told the protected-resource metadata
// is (Auth.MetadataURL, or the well-known URL of the resource); "" without
// WithAuth. Serve MetadataHandler at its path.
func (s *Server) MetadataURL() string {
	if s.cfg.auth == nil {
		return ""
	}
	return s.cfg.auth.metadataURL()
}

// MetadataHandler serves ProtectedResourceMetadata, with the MCP Go SDK's
// handler (GET, CORS for browser clients). Mount it at the path of
// MetadataURL. Nil without WithAuth.
func (s *Server) MetadataHandler() http.Handler {
	md := s.ProtectedResourceMetadata()
	if md == nil {
		return nil
	}
	return auth.ProtectedResourceMetadataHandler(md)
}

// authHTTP wraps h, the server's streamable HTTP handler, in the bearer
// authentication of WithAuth and the per-tool scope check.
func (s *Server) authHTTP(h http.Handler, limit int64) http.Handler {
	a := s.cfg.auth
	return auth.RequireBearerToken(a.Verifier, &auth.RequireBearerTokenOptions{ResourceMetadataURL: a.metadataURL()})(s.scopeHTTP(h, limit))
}

// scopeHTTP answers 403 insufficient_scope, before h reads it, to a POST
// whose tools/call names a tool the verified token's scopes do not cover,
// as the MCP authorization specification asks: the WWW-Authenticate header
// names every scope the tool needs, so the client can ask for them. A body
// over limit, or that is not one JSON-RPC message, goes on to h untouched,
// which refuses it (stampHTTP).
func (s *Server) scopeHTTP(h http.Handler, limit int64) http.Handler {
	if !s.scoped() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil {
			http.Error(w, "mcpserver: reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		rest := r.Body
		if int64(len(body)) <= limit {
			info := auth.TokenInfoFromContext(r.Context())
			p := &toolreg.Principal{}
			if info != nil {
				p = &toolreg.Principal{Subject: info.UserID, Scopes: info.Scopes}
			}
			if t, missing := s.callsUnallowed(body, p); t != nil {
				s.insufficientScope(w, t, missing)
				return
			}
		}
		r2 := r.Clone(r.Context())
		r2.Body = readCloser{io.MultiReader(bytes.NewReader(body), rest), rest}
		h.ServeHTTP(w, r2)
	})
}

// callsUnallowed returns the tool of the tools/call body is that p may not
// call, with the scopes it lacks; nil when there is none, or when body is
// no single JSON-RPC message (a batch, or not JSON: stampHTTP refuses it).
func (s *Server) callsUnallowed(body []byte, p *toolreg.Principal) (*toolreg.Tool, []string) {
	if !json.Valid(body) {
		return nil, nil
	}
	msg, err := jsonrpc.DecodeMessage(body)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || req.Method != "tools/call" {
		return nil, nil
	}
	var params struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(req.Params, &params) != nil {
		return nil, nil
	}
	t, err := s.bound.Pipeline.Get(params.Name)
	if err != nil {
		return nil, nil // the SDK answers an unknown tool
	}
	if missing := p.Missing(t.Spec()); missing != nil {
		return t, missing
	}
	return nil, nil
}

// insufficientScope answers 403 for a call of t, which needs scopes the
// token lacks.
func (s *Server) insufficientScope(w http.ResponseWriter, t *toolreg.Tool, missing []string) {
	desc := fmt.Sprintf("tool %s needs the %s %s", t.Name(), scopesWord(len(missing)), strings.Join(missing, " "))
	w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q, error_description=%q`,
		strings.Join(t.Spec().Scopes, " "), s.cfg.auth.metadataURL(), desc))
	http.Error(w, "insufficient_scope: "+desc, http.StatusForbidden)
}

func scopesWord(n int) string {
	if n == 1 {
		return "scope"
	}
	return "scopes"
}

// readCloser reads what Reader holds and closes Closer: a body whose start
// was read to look at it, put back before the rest.
type readCloser struct {
	io.Reader
	io.Closer
}
