// Package mcpserver serves a bound set of toolreg tools over the Model Context
// Protocol, with the official MCP Go SDK (github.com/modelcontextprotocol/go-sdk),
// over stdio (Run) or streamable HTTP (Handler).
//
//	srv, err := mcpserver.New(bound, eff)
//	err = srv.Run(ctx, mcpserver.StdioTransport())
//
// Over stdio, a LineTransport stands in front of the SDK (Run and Connect
// also put one in place of an *mcp.StdioTransport or *mcp.IOTransport): each
// line is judged on its own, so a line that is not JSON (-32700), JSON that
// is not one JSON-RPC 2.0 message, a batch, a line over MaxLineBytes or
// nesting deeper than MaxDepth (-32600) is answered with a JSON-RPC error and
// the session goes on; a truncated line costs only itself; a call before
// initialize gets -32600, not the SDK's code 0.
//
// Over every transport (Run, Connect, Handler), a request whose "id" is
// null, which MCP forbids and the SDK would take for a notification (a
// tools/call run with no one told its result), is refused with -32600
// Invalid Request, id null, and a message saying to send a string or number
// id (over streamable HTTP, with status 400); it runs nothing. So is a
// request whose id is a number other than a whole one of at most 2^53 in
// size (7.25, 1e3, 9007199254740993), which the SDK would read as another id
// (7, 1000, 2^53): its answer would carry that id, and a call would be taken
// for that id's retry. Member names are matched exactly, as the SDK matches
// them: "Id" is not the id. Over streamable HTTP, a JSON-RPC batch is refused
// too (the SDK serves batches at protocol versions before 2025-06-18, whose
// calls the server could not stamp, below), a body that is not JSON with
// -32700 (the SDK would serve its first JSON value and ignore the rest), and
// a body over 8 MiB, or over the handler's MaxRequestBodyBytes when that is
// larger, with status 413. With WithAuth, the scope check passes these on
// to be refused the same way. A response
// the server never asked for, a "result" or "error" whose id matches no
// request the server sent that session (elicitation/create, ping) and has
// not been answered, or that has no id, is logged at level Warn through
// WithLogger, with the session and the id, and ignored: JSON-RPC answers
// nothing to a response. The server remembers the last 1,024 requests each
// session has not answered.
//
// tools/list answers with every tool of the pipeline table in the registry's
// "mcp" provider form (registry.ProviderSchema, the form `toolreg schema
// --provider mcp` prints): inputSchema is the tool's parameters JSON Schema,
// and annotations carry readOnlyHint (not side_effect), idempotentHint (true
// for a read-only tool, false for a side-effecting one, unless the manifest's
// annotations say otherwise) and, when the manifest says, title,
// destructiveHint and openWorldHint. The list is rendered once, in New, never
// per request; the SDK lists it in name order. Because it never changes, the
// server advertises the tools capability without listChanged and never sends
// notifications/tools/list_changed (a tool added later through MCP() is not
// announced either), except with WithToolSearch (below), where each
// session's list grows. A remote tool (pinned from another MCP server, package
// remote) that is withdrawn or suspended at run time is left out of each
// tools/list, unannounced, and a call of it is answered with its
// *toolreg.ToolWithdrawnError's model message.
//
// tools/call routes by side effect, as the pipeline does:
//
//   - a read-only tool runs inline through the runner. Arguments that break
//     its contract come back as an isError result whose text is
//     toolreg.ToolArgumentError.ModelMessage, so the model can correct the
//     call; the function is not invoked. Any other failure of the tool is an
//     isError result too. Only an unknown tool name is a protocol error
//     (with WithToolSearch, a tool the session was not offered, known or
//     not, is an isError result telling the model to search, so the answer
//     says nothing of which tools exist).
//   - a side-effecting tool is staged with an Activation's Act (which checks
//     its arguments the same way) and executed by the effector's Process. The
//     result is the effector's: OK as text and structured content, ERROR,
//     REJECTED and EXPIRED as isError results carrying the status and message.
//   - a side-effecting tool whose manifest says approval: required is staged
//     as an APPROVAL intent, which the effector records as pending; then the
//     client's user is asked to approve exactly that call (the tool, the
//     manifest's approval_reason, the arguments as they will run) through
//     MCP elicitation, when the client declares the capability: with
//     elicitation/create while the call waits (protocols 2025-06-18 to
//     2025-11-25), or, from protocol 2026-07-28, as a result whose
//     inputRequests the client answers in a retry of the call, carrying a
//     requestState the server signs for that call and caller. Accept runs the
//     call once (effector.Decide; the decision is recorded as by the
//     caller's principal, else ApproverClient) and returns its result;
//     decline or cancel denies it and returns an isError result. Without the
//     capability, or when asking fails, the result is an isError naming the
//     pending approval (also in _meta, MetaApprovalID) and `toolreg approvals
//     approve ID`; the same call retried (same idempotency key) once someone
//     decided returns the outcome, executing an approved call if no one has.
//
// # Intent identity: why a retried call does not repeat its effect
//
// The intent id is IntentID(entity key, seq, 0), with seq a hash of the tool
// name and the request's identity, which is, in this order:
//
//  1. the idempotency key the client sends in the request's _meta, under
//     MetaIdempotencyKey ("toolreg/idempotency-key"): the entity key is then
//     the server's (WithEntityKey), not the session's, so a client that
//     crashes and retries on a new connection still gets the first result.
//     This is the identity to use: only the client knows which calls are
//     retries of one another. Use a fresh random key per logical call; reusing
//     a key with other arguments is refused with an isError result (the
//     effector records a digest of each call's tool and arguments). A key is
//     its caller's: the entity key also holds the subject of the call's
//     principal (the verified bearer token's, with WithAuth; WithPrincipal's;
//     or WithCaller's, as over stdio), so one caller's key never reads
//     another's result. A caller without a name has its session's keys
//     alone (a retry on a new connection runs again: configure WithCaller
//     over stdio), and a request with neither a principal nor a session
//     (stateless HTTP without auth) is refused a key, with an isError result
//     saying so: no two clients without identity share keys.
//  2. otherwise, the JSON-RPC request id, within the session: the entity key
//     is the server's key plus the session id (the Mcp-Session-Id of
//     streamable HTTP; for stdio and other session-less transports, an id Run
//     draws for the connection). A request delivered twice with the same id on
//     one session (an HTTP POST retried after a dropped response, a client
//     replaying a line) is executed once. JSON-RPC ids restart with every
//     connection, which is why they are scoped to it: a restarted server with
//     a persistent dedup store must not answer a new call 1 with an old one's
//     result. The SDK does not expose the request id to handlers, so Run and
//     Handler copy it into the request's _meta (metaRequestID) as the message
//     is read, overwriting anything the client put there.
//  3. a session-less request with no key (stateless streamable HTTP): a fresh
//     random identity, since ids from different clients would collide; such a
//     call is executed once per delivery.
//
// Each call's intent is created with the server's clock (WithClock) and
// expires after WithIntentTTL.
//
// With WithToolSearch, a large bound set is not listed whole: each session
// starts with a few tools plus search_tools (package toolsearch), grows as its
// model searches, and is sent notifications/tools/list_changed when it does;
// a call of a tool the session was not offered is answered with a tool error
// and never runs.
//
// # Authority: scopes
//
// A tool whose manifest declares scopes is listed, and may be called, only
// by a caller whose principal holds them all (see WithPrincipal, WithCaller,
// WithAuth): tools/list leaves it out for anyone else, a call of it is an
// isError result naming the missing scope (toolreg.ScopeError's model
// message) and runs nothing, and a side-effecting call's intent carries
// the principal, which the effector checks again. Over streamable HTTP with
// WithAuth, the server authenticates OAuth 2.1 bearer tokens with the MCP
// Go SDK's auth.RequireBearerToken and a verifier (package jwtauth for JWT
// access tokens): no token, or an invalid one, is 401 with a
// WWW-Authenticate naming the protected-resource metadata (RFC 9728, served
// by MetadataHandler), and a tools/call of a tool whose scopes the token
// lacks is 403 insufficient_scope, with a WWW-Authenticate naming the
// scopes the tool needs, before the SDK reads the call.
//
// mcpserver refuses to start (New) without an effector when the bound set has
// side-effecting tools, and with a tool whose schema the SDK would refuse.
package mcpserver
