package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/par"
	"github.com/beam-agents/toolreg/provider"
	"github.com/beam-agents/toolreg/runner"
	"github.com/beam-agents/toolreg/toolsearch"
)

// Meta keys this package reads from a tools/call request's _meta and writes
// into a side-effecting call's result _meta.
const (
	// MetaIdempotencyKey is the _meta key under which a client names a call,
	// so that a retry of it is answered with the first call's result instead
	// of executing the effect again. The value must be a non-empty string of
	// at most 256 bytes. A key is the caller's (see WithPrincipal), on any
	// connection; a caller without a name has its session's keys alone. It
	// names one call: the same key with other arguments is refused with an
	// isError result.
	MetaIdempotencyKey = "toolreg/idempotency-key"
	// MetaIntentID is the result _meta key carrying the id of the intent a
	// side-effecting call was executed as.
	MetaIntentID = "toolreg/intent-id"
	// MetaStatus is the result _meta key carrying the effector's status (OK,
	// ERROR, REJECTED, EXPIRED).
	MetaStatus = "toolreg/status"
)

// Option configures a Server.
type Option func(*config)

type config struct {
	impl      mcp.Implementation
	entityKey string
	runner    *runner.Runner
	logger    *slog.Logger
	// act configures each side-effecting call's activation (clock, TTL,
	// signing key), in the order the options came: a later one wins.
	act       []runner.ActivationOption
	principal func(mcp.Request) *toolreg.Principal // WithPrincipal (authority.go)
	caller    *toolreg.Principal                   // WithCaller
	auth      *Auth                                // WithAuth
	// search is WithToolSearch's; nil serves every tool to every session.
	search *searchConfig
}

// WithImplementation sets the name and version the server reports in
// initialize. The default is "toolreg" with version "v0".
func WithImplementation(name, version string) Option {
	return func(c *config) { c.impl = mcp.Implementation{Name: name, Version: version} }
}

// WithEntityKey sets the entity key of this server's intents: calls named by
// an idempotency key use it as is, others it plus their session id. The
// default is "mcp". Servers that share a dedup store must use different keys.
func WithEntityKey(key string) Option {
	return func(c *config) { c.entityKey = key }
}

// WithRunner sets the runner read-only tools run through. The default is
// runner.New().
func WithRunner(r *runner.Runner) Option {
	return func(c *config) { c.runner = r }
}

// WithClock sets the clock that dates intents (created, and expiry after the
// TTL). The default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.act = append(c.act, runner.WithClock(now)) }
}

// WithIntentTTL sets how long an intent stays executable after it is created;
// see runner.WithIntentTTL. The default, and any d <= 0, is
// runner.DefaultIntentTTL (1h).
func WithIntentTTL(d time.Duration) Option {
	if d <= 0 {
		d = runner.DefaultIntentTTL // so it also undoes an earlier WithIntentTTL
	}
	return func(c *config) { c.act = append(c.act, runner.WithIntentTTL(d)) }
}

// WithSigningKey signs every intent with HMAC-SHA256 under keyID, for an
// effector made with effector.WithVerify; see runner.WithSigningKey. The
// default is to stage intents unsigned.
func WithSigningKey(keyID string, key []byte) Option {
	return func(c *config) { c.act = append(c.act, runner.WithSigningKey(keyID, key)) }
}

// WithLogger sets the logger of the server and of the SDK under it. The
// default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// Server is an MCP server for one bound set of tools. It is safe for
// concurrent use: serve any number of connections with it.
type Server struct {
	cfg      config
	bound    *bindings.Bound
	effector *effector.Effector
	tools    []*mcp.Tool
	mcp      *mcp.Server
	// stateKey signs the requestState of an approval's elicitation (see
	// approval.go); drawn in New, so a state outlives no server.
	stateKey []byte
	// calls are the requests sent to clients not answered yet (strays.go).
	calls pendingCalls
}

// New returns the server of bound's tools. Read-only tools run through the
// runner; side-effecting ones are executed by eff, which must have been made
// with bound.Effector. eff may be nil only when bound has no side-effecting
// tool. New renders every tool's tools/list entry, once.
func New(bound *bindings.Bound, eff *effector.Effector, opts ...Option) (*Server, error) {
	cfg := config{
		impl:      mcp.Implementation{Name: "toolreg", Version: "v0"},
		entityKey: "mcp",
		logger:    slog.New(slog.DiscardHandler),
		act:       []runner.ActivationOption{runner.WithClock(time.Now)},
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.runner == nil {
		cfg.runner = runner.New()
	}
	if bound == nil || bound.Pipeline == nil {
		return nil, errors.New("mcpserver: no bound tools: pass the *bindings.Bound that Binder.Bind returned")
	}
	if eff == nil {
		var effects []string
		for _, t := range bound.Pipeline.Tools() {
			if t.SideEffect() {
				effects = append(effects, t.Name())
			}
		}
		if len(effects) > 0 {
			return nil, fmt.Errorf("mcpserver: side-effecting tools %s and no effector: pass effector.New(bound.Effector, store)", strings.Join(effects, ", "))
		}
	}
	s := &Server{cfg: cfg, bound: bound, effector: eff, stateKey: newStateKey()}
	s.mcp = mcp.NewServer(&cfg.impl, &mcp.ServerOptions{
		Logger: cfg.logger,
		// The tools are fixed here, in New, and the server never sends
		// notifications/tools/list_changed: say so, rather than the SDK's
		// default listChanged: true. Nor does it send log messages, so it
		// does not advertise logging (the SDK's default, deprecated since
		// protocol version 2026-07-28).
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	if s.scoped() {
		s.mcp.AddReceivingMiddleware(s.listAllowed)
	}
	if a := cfg.auth; a != nil && (a.Verifier == nil || a.Resource == "") {
		return nil, errors.New("mcpserver: WithAuth needs a Verifier (such as (*jwtauth.Verifier).Verify) and the server's Resource identifier (its URL)")
	}
	tools, err := mcpTools(bound.Pipeline)
	if err != nil {
		return nil, err
	}
	// The SDK's AddTool is safe for concurrent use, and the registry is
	// only read. A remote tool withdrawn already is served, hidden from
	// tools/list and refused when called, as one withdrawn later is.
	byName := make(map[string]*toolreg.Tool, bound.Pipeline.Len())
	for _, t := range bound.Pipeline.Tools() {
		byName[t.Name()] = t
	}
	errs := make([]error, len(tools))
	par.Do(len(tools), func(i int) {
		mt := tools[i]
		t, ok := byName[mt.Name]
		if !ok {
			errs[i] = fmt.Errorf("mcpserver: the mcp form lists %q, which the pipeline does not hold", mt.Name)
			return
		}
		errs[i] = addRendered(s.mcp, mt, s.handler(t))
	})
	if err := par.First(errs); err != nil {
		return nil, err
	}
	s.tools = tools
	if hasRemote(bound.Pipeline) {
		s.mcp.AddReceivingMiddleware(s.hideWithdrawn)
	}
	if cfg.search != nil {
		if err := s.initSearch(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// addRendered adds a tool New rendered, before any session exists to list it.
// The SDK's AddTool re-encodes and decodes an input schema given as JSON
// twice, to check that it is an object and that its x-mcp-header annotations
// are valid, and an output schema once, each decode with a 32 KiB buffer of
// its own: at 10,000 tools that was a third of New's time, and 600 MiB of
// buffers to collect. The mcp form writes every input schema as an object, with no
// x-mcp-header (TestRenderedToolsPassTheSDKChecks holds every manifest in the
// repository to that), so the SDK is given stand-ins to check, and the tool
// gets its rendered schemas back as soon as AddTool returns. Tools that a
// search offers a live session are added with addTool, checked in full.
func addRendered(srv *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) error {
	in, out := t.InputSchema, t.OutputSchema
	t.InputSchema = inputStandIn
	if out != nil {
		t.OutputSchema = outputStandIn
	}
	err := addTool(srv, t, h)
	t.InputSchema, t.OutputSchema = in, out
	return err
}

// The stand-ins are of the SDK's own schema type, which it checks without
// encoding it (an object, non-nil). The input one does not encode at all
// (its extra keyword is a func), so the SDK's search for x-mcp-header
// annotations, which encodes the schema and decodes it again, finds no
// properties and has nothing to decode. Should an SDK refuse a schema that
// does not encode, AddTool panics, New fails, and the tests say so.
var (
	inputStandIn  = &jsonschema.Schema{Type: "object", Extra: map[string]any{"toolreg-stand-in": func() {}}}
	outputStandIn = &jsonschema.Schema{}
)

// addTool adds one tool, turning the SDK's panics on a tool it refuses into
// an error that names the tool.
func addTool(srv *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("mcpserver: tool %q: the MCP SDK refuses it: %v", t.Name, r)
		}
	}()
	srv.AddTool(t, h)
	return nil
}

// Tools returns the tools/list entries, in registration order, as rendered in
// New (tools/list itself is in name order: the SDK sorts it). The tools are shared and must not be modified.
func (s *Server) Tools() []*mcp.Tool { return s.tools }

// MCP returns the SDK server underneath, to add prompts, resources or
// middleware. Connecting it directly, rather than through Run, Connect or
// Handler, loses the request-id identity of side-effecting calls (see the
// package doc): only idempotency keys then protect retries.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one connection over t, such as StdioTransport(), until the
// client disconnects or ctx ends. An *mcp.StdioTransport or *mcp.IOTransport
// is served by a LineTransport over the same streams and line bound, so a bad
// line is answered instead of ending the session.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.sdkServer().Run(ctx, s.stampTransport(lineTransport(t)))
}

// Connect starts serving one connection over t and returns its session, for
// callers that manage sessions themselves (tests, in-memory transports). It
// replaces the SDK's stdio and io transports as Run does.
func (s *Server) Connect(ctx context.Context, t mcp.Transport, opts *mcp.ServerSessionOptions) (*mcp.ServerSession, error) {
	return s.sdkServer().Connect(ctx, s.stampTransport(lineTransport(t)), opts)
}

// Handler returns an http.Handler serving the streamable HTTP transport.
// opts may be nil; see mcp.StreamableHTTPOptions.
//
// With WithAuth, every request must carry a valid bearer token, and a
// tools/call of a tool whose scopes it lacks is answered 403
// insufficient_scope; see WithAuth.
func (s *Server) Handler(opts *mcp.StreamableHTTPOptions) http.Handler {
	limit := int64(maxStampBody)
	if opts != nil && opts.MaxRequestBodyBytes > limit {
		limit = opts.MaxRequestBodyBytes // the operator allows more: stamp as much
	}
	h := s.stampHTTP(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.sdkServer() }, opts), limit)
	if s.cfg.auth != nil {
		return s.authHTTP(h, limit)
	}
	return h
}

func (s *Server) handler(t *toolreg.Tool) mcp.ToolHandler {
	if t.SideEffect() {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return s.callEffect(joinTrace(ctx, req), t, req), nil
		}
	}
	if t.Name() == toolsearch.Name { // it answers in MCP's form, however it was bound
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return s.callInline(toolsearch.WithForm(joinTrace(ctx, req), provider.MCP), t, req), nil
		}
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.callInline(joinTrace(ctx, req), t, req), nil
	}
}

// arguments returns the call's arguments, an absent or null value as {}.
func arguments(req *mcp.CallToolRequest) json.RawMessage {
	a := req.Params.Arguments
	if len(a) == 0 || string(a) == "null" {
		return json.RawMessage("{}")
	}
	return a
}

func (s *Server) callInline(ctx context.Context, t *toolreg.Tool, req *mcp.CallToolRequest) *mcp.CallToolResult {
	res, err := s.cfg.runner.Run(toolreg.WithPrincipal(ctx, s.principal(req)), t, arguments(req))
	if err != nil {
		return toolError(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return errorResult(fmt.Sprintf("%s: its result cannot be encoded as JSON: %v", t.Name(), err))
	}
	return okResult(b)
}

func (s *Server) callEffect(ctx context.Context, t *toolreg.Tool, req *mcp.CallToolRequest) *mcp.CallToolResult {
	pos, err := s.position(t.Name(), req)
	if err != nil {
		return errorResult(err.Error())
	}
	// The activation stages this one intent and is dropped: Act's intent goes
	// straight to the effector, so there is nothing to Drain.
	// ActContext keeps the request's JSON-RPC id (joinTrace put it in ctx)
	// with the intent, for the effector's span.
	act := append(s.cfg.act[:len(s.cfg.act):len(s.cfg.act)], runner.WithPrincipal(s.principal(req)))
	in, err := runner.NewActivation(s.bound.Pipeline, pos.entityKey, pos.seq, act...).ActContext(ctx, t.Name(), arguments(req))
	if err != nil {
		return toolError(err)
	}
	if in.Kind == intent.KindApproval {
		return s.callApproval(ctx, t, req, in)
	}
	res, err := s.effector.Process(ctx, in)
	if err != nil {
		return s.notExecuted(ctx, t, req, in, err)
	}
	return effectResult(in.ID, res)
}

// notExecuted renders Process's error for the call req staged as in.
func (s *Server) notExecuted(ctx context.Context, t *toolreg.Tool, req *mcp.CallToolRequest, in *intent.Intent, err error) *mcp.CallToolResult {
	// No result: nothing ran, or the dedup store holds what did and a
	// retry of this same call will be answered from it.
	s.cfg.logger.ErrorContext(ctx, "mcpserver: effector", "tool", t.Name(), "intent_id", in.ID, "error", err)
	msg := fmt.Sprintf("%s was not executed: %v. Retry the same call (same idempotency key) later.", t.Name(), err)
	if refused := (*effector.RefusedError)(nil); errors.As(err, &refused) {
		msg = fmt.Sprintf("%s was not executed: the effector refused it: %v", t.Name(), err)
	}
	if nd := (*effector.NonDeterministicError)(nil); errors.As(err, &nd) {
		msg = fmt.Sprintf("%s was not executed: this call's identity (intent %s) was already used for a call with other arguments (%s, now %s); nothing ran, and the first call's result is not returned for this one",
			t.Name(), in.ID, nd.Recorded, nd.Asked)
		if key, ok := req.Params.Meta[MetaIdempotencyKey].(string); ok {
			msg = fmt.Sprintf("%s was not executed: _meta %q %q was already used for a call to %s with other arguments; a key names one call: send a fresh key for a new call, or the first call's arguments to read its result",
				t.Name(), MetaIdempotencyKey, key, t.Name())
		}
	}
	if detached := (*effector.DetachedError)(nil); errors.As(err, &detached) {
		msg = fmt.Sprintf("%s is still running: the request ended before it returned, and its result will be recorded. Retry the same call (same idempotency key) to read it.", t.Name())
	}
	r := errorResult(msg)
	r.Meta = mcp.Meta{MetaIntentID: in.ID}
	return r
}

// effectResult renders the effector's result of intent id.
func effectResult(id string, res intent.Result) *mcp.CallToolResult {
	var r *mcp.CallToolResult
	if res.Status == intent.StatusOK {
		r = okResult(res.Payload)
	} else {
		msg := res.Status.String()
		if res.ErrorMessage != "" {
			msg += ": " + res.ErrorMessage
		}
		r = errorResult(msg)
	}
	r.Meta = mcp.Meta{MetaIntentID: id, MetaStatus: res.Status.String()}
	return r
}

// toolError renders a tool's failure as the model should read it: the model
// message of bad arguments, the error text otherwise.
func toolError(err error) *mcp.CallToolResult {
	var (
		argErr *toolreg.ToolArgumentError
		scope  *toolreg.ScopeError
		budget *toolreg.BudgetError
	)
	switch {
	case errors.As(err, &argErr):
		return errorResult(argErr.ModelMessage())
	case errors.As(err, &scope):
		return errorResult(scope.ModelMessage())
	case errors.As(err, &budget):
		return errorResult(budget.ModelMessage())
	}
	var withdrawn *toolreg.ToolWithdrawnError
	if errors.As(err, &withdrawn) {
		return errorResult(withdrawn.ModelMessage())
	}
	return errorResult(err.Error())
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// okResult returns the JSON result b as text, and also as structured content
// when it is an object (MCP's structuredContent must be one).
func okResult(b []byte) *mcp.CallToolResult {
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
	if isObject(b) {
		r.StructuredContent = json.RawMessage(b)
	}
	return r
}

func isObject(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}
