package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// metaRequestID is the _meta key under which Run, Connect and Handler copy a
// tools/call request's JSON-RPC id (as its JSON text) before the SDK reads
// it: the SDK gives handlers no other way to see the id.
const metaRequestID = "toolreg/jsonrpc-id"

const maxIdempotencyKey = 256

// position is where a side-effecting call's intent sits: IntentID(entityKey,
// seq, 0).
type position struct {
	entityKey []byte
	seq       int64
}

// position derives the call's intent position from its identity; see the
// package doc for the order and the reasons.
func (s *Server) position(tool string, req *mcp.CallToolRequest) (position, error) {
	meta := req.Params.Meta
	session := ""
	if req.Session != nil {
		session = req.Session.ID()
	}
	if v, ok := meta[MetaIdempotencyKey]; ok {
		key, isString := v.(string)
		if !isString || key == "" || len(key) > maxIdempotencyKey {
			return position{}, fmt.Errorf("%s was not run: _meta %q must be a non-empty string of at most %d bytes, such as a random UUID naming this call; got %s",
				tool, MetaIdempotencyKey, maxIdempotencyKey, describe(v))
		}
		entity := s.cfg.entityKey
		switch p := s.subject(req); {
		case p != "":
			// Keys are the caller's: another caller's same key is another call.
			entity += "/principal/" + hexDigest(p)
		case session != "":
			// A caller without a name shares its keys with no one: they
			// are its session's.
			entity += "/session/" + session
		default:
			return position{}, fmt.Errorf("%s was not run: _meta %q needs a caller to scope it to, and this request has none: no principal (no bearer token: see WithAuth; nor WithPrincipal or WithCaller) and no session (stateless HTTP); send no key to run the call once, or authenticate",
				tool, MetaIdempotencyKey)
		}
		return position{[]byte(entity), seqOf("key", tool, key)}, nil
	}
	if id, ok := meta[metaRequestID].(string); ok && session != "" {
		return position{[]byte(s.cfg.entityKey + "/" + session), seqOf("jsonrpc-id", tool, id)}, nil
	}
	// No identity a retry would repeat: a fresh one, so the call runs once.
	var nonce [16]byte
	rand.Read(nonce[:])
	return position{[]byte(s.cfg.entityKey + "/" + session), seqOf("nonce", tool, string(nonce[:]))}, nil
}

func describe(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	if len(b) > 80 {
		return fmt.Sprintf("%d bytes of JSON", len(b))
	}
	return string(b)
}

// seqOf hashes the identity's parts, each length-prefixed so that no two
// part lists give the same input, into a non-negative seq.
func seqOf(parts ...string) int64 {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		io.WriteString(h, p)
	}
	return int64(binary.BigEndian.Uint64(h.Sum(nil)) & math.MaxInt64)
}

// stamp copies a tools/call request's JSON-RPC id into its params' _meta
// under metaRequestID, replacing whatever the client put there. Any other
// message, and params it cannot read, are returned unchanged: the SDK then
// reports them as it would have.
func stamp(msg jsonrpc.Message) jsonrpc.Message {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || !req.ID.IsValid() {
		return msg
	}
	id, err := json.Marshal(req.ID.Raw())
	if err != nil {
		return msg
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(req.Params, &params); err != nil || params == nil {
		return msg
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &meta); err != nil || meta == nil {
			return msg
		}
	}
	idText, _ := json.Marshal(string(id))
	meta[metaRequestID] = idText
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return msg
	}
	p, err := json.Marshal(params)
	if err != nil {
		return msg
	}
	req.Params = p
	return req
}

// stampTransport wraps t so that its connection stamps request ids, has a
// session id (the transport's own, or one drawn here for a session-less
// transport such as stdio, so request ids are scoped to the connection),
// and logs and drops a response to no request the server sent it.
func (s *Server) stampTransport(t mcp.Transport) mcp.Transport { return &stampingTransport{t, s} }

type stampingTransport struct {
	mcp.Transport
	s *Server
}

func (t *stampingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &stampingConn{Connection: c, id: rand.Text(), s: t.s}, nil
}

type stampingConn struct {
	mcp.Connection
	id string
	s  *Server
}

func (c *stampingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		if resp, ok := msg.(*jsonrpc.Response); ok && !c.s.calls.answered(c.SessionID(), resp.ID) {
			c.s.logStray(ctx, c.SessionID(), resp)
			continue
		}
		return stamp(msg), nil
	}
}

func (c *stampingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
		c.s.calls.sent(c.SessionID(), req.ID) // before the client can answer it
	}
	return c.Connection.Write(ctx, msg)
}

func (c *stampingConn) Close() error {
	c.s.calls.end(c.SessionID())
	return c.Connection.Close()
}

func (c *stampingConn) SessionID() string {
	if id := c.Connection.SessionID(); id != "" {
		return id
	}
	return c.id
}

// maxStampBody bounds the POST bodies stampHTTP reads to stamp, unless the
// handler's StreamableHTTPOptions.MaxRequestBodyBytes allows more; a larger
// one is refused (413), since it could not be stamped.
const maxStampBody = 8 << 20

// stampHTTP stamps the request id of a tools/call POSTed to h; refuses what
// it cannot stamp or the server could not answer under its own id (a body
// over limit or that is not JSON, a batch, a request whose id is null, a
// fraction or beyond 2^53); notes the requests the server sends
// each session; and logs a response POSTed to no request the server sent,
// which the SDK then acknowledges and ignores.
func (s *Server) stampHTTP(h http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		session := r.Header.Get("Mcp-Session-Id")
		if session != "" {
			switch r.Method {
			case http.MethodDelete:
				s.calls.end(session)
			case http.MethodGet, http.MethodPost:
				w = &sentWatcher{ResponseWriter: w, calls: &s.calls, session: session}
			}
		}
		if r.Method != http.MethodPost || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil {
			http.Error(w, "mcpserver: reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if int64(len(body)) > limit {
			refuseHTTP(w, http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest, fmt.Sprintf("mcpserver: a request body of more than %d bytes: send smaller messages (or raise StreamableHTTPOptions.MaxRequestBodyBytes)", limit))
			return
		}
		if !json.Valid(body) {
			// The SDK would serve the first JSON value and ignore the rest,
			// which the checks below could not read.
			refuseHTTP(w, http.StatusBadRequest, jsonrpc.CodeParseError, "mcpserver: a request body that is not JSON ("+syntaxError(body)+"): POST one JSON-RPC 2.0 message")
			return
		}
		if trimmed := bytes.TrimSpace(body); trimmed[0] == '[' {
			// The SDK serves batches at protocol versions before
			// 2025-06-18; their calls would go unstamped.
			refuseHTTP(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "mcpserver: a JSON-RPC batch: batches are not supported (MCP removed them in 2025-06-18); POST one message at a time")
			return
		}
		if m := readEnvelope(body); m["method"] != nil && string(m["method"]) != "null" {
			if problem := requestIDProblem(m["id"]); problem != "" {
				refuseHTTP(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, problem)
				return
			}
		}
		if msg, err := jsonrpc.DecodeMessage(body); err == nil {
			switch msg := msg.(type) {
			case *jsonrpc.Request:
				if msg.Method == "tools/call" {
					if b, err := jsonrpc.EncodeMessage(stamp(msg)); err == nil {
						body = b
					}
				}
			case *jsonrpc.Response:
				if !s.calls.answered(session, msg.ID) {
					s.logStray(r.Context(), session, msg)
				}
			}
		}
		r2 := r.Clone(r.Context())
		r2.Body = io.NopCloser(bytes.NewReader(body))
		r2.ContentLength = int64(len(body))
		h.ServeHTTP(w, r2)
	})
}

// refuseHTTP answers a POST the server will not pass on with status and a
// JSON-RPC error of code whose id is null: the request's own cannot be
// trusted.
func refuseHTTP(w http.ResponseWriter, status int, code int64, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	m, _ := json.Marshal(message)
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":%s}}`+"\n", code, m)
}

// hexDigest names a principal in an entity key by its SHA-256, so any
// principal, however long or odd, gives a key of one size.
func hexDigest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}
