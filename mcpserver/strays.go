package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// nullIDMessage answers a request whose id is null, which MCP forbids (the
// SDK would take it for a notification and answer nothing).
const nullIDMessage = `mcpserver: this request's "id" is null, which MCP forbids: give a request a string or number id (or send no "id" for a notification)`

// envelope is a JSON-RPC message's members, named exactly, as the SDK reads
// them ("Id" is not "id"); nil when the message is not a JSON object. A
// member written twice is its last value, as the SDK reads it too.
type envelope map[string]json.RawMessage

func readEnvelope(msg []byte) envelope {
	var m envelope
	_ = json.Unmarshal(msg, &m)
	return m
}

// requestIDProblem says what in a request's id (its JSON text; nil when the
// message has none) the server cannot answer under it, or "". The SDK reads
// a number id through a float64 into an int64, so a fraction (7.25), an
// exponent (1e3) or an integer beyond 2^53 would be answered as, and its
// call deduplicated with, another id.
func requestIDProblem(id json.RawMessage) string {
	id = bytes.TrimSpace(id)
	switch {
	case id == nil:
		return ""
	case string(id) == "null":
		return nullIDMessage
	case id[0] == '-' || id[0] >= '0' && id[0] <= '9':
		n, err := strconv.ParseInt(string(id), 10, 64)
		if err != nil || n > 1<<53 || n < -(1<<53) {
			return fmt.Sprintf("mcpserver: this request's id %.40s is not an integer of at most 2^53, which the server could not answer under its own id: give a request a string id or a whole number", id)
		}
	}
	return ""
}

// maxPendingCalls bounds the requests (elicitation, ping) one session's
// client has not answered yet that the server remembers; past it, the
// oldest is forgotten, and its late response logged as stray.
const maxPendingCalls = 1024

// pendingCalls remembers, per session, the ids of the requests the server
// sent a client and no response has answered yet, so that a response to
// anything else (a stray "result" or "error") is told apart, logged and
// ignored: JSON-RPC answers nothing to a response.
type pendingCalls struct {
	mu  sync.Mutex
	ids map[string]*sessionCalls
}

type sessionCalls struct {
	set   map[jsonrpc.ID]struct{}
	order []jsonrpc.ID // oldest first, to forget past maxPendingCalls
}

// sent records that the server sent session a request with id.
func (p *pendingCalls) sent(session string, id jsonrpc.ID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ids == nil {
		p.ids = map[string]*sessionCalls{}
	}
	sc := p.ids[session]
	if sc == nil {
		sc = &sessionCalls{set: map[jsonrpc.ID]struct{}{}}
		p.ids[session] = sc
	}
	if _, ok := sc.set[id]; ok {
		return
	}
	for len(sc.order) >= maxPendingCalls {
		delete(sc.set, sc.order[0])
		sc.order = sc.order[1:]
	}
	sc.set[id] = struct{}{}
	sc.order = append(sc.order, id)
}

// answered reports whether a response with id answers a request the server
// sent session, and forgets that request.
func (p *pendingCalls) answered(session string, id jsonrpc.ID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	sc := p.ids[session]
	if sc == nil || !id.IsValid() {
		return false
	}
	if _, ok := sc.set[id]; !ok {
		return false
	}
	delete(sc.set, id)
	for i, o := range sc.order {
		if o == id {
			sc.order = append(sc.order[:i], sc.order[i+1:]...)
			break
		}
	}
	if len(sc.set) == 0 {
		delete(p.ids, session)
	}
	return true
}

// end forgets what session was sent.
func (p *pendingCalls) end(session string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.ids, session)
}

// logStray logs a response to no request the server sent session.
func (s *Server) logStray(ctx context.Context, session string, resp *jsonrpc.Response) {
	id := "null"
	if resp.ID.IsValid() {
		if b, err := json.Marshal(resp.ID.Raw()); err == nil {
			id = string(b)
		}
	}
	kind := "result"
	if resp.Error != nil {
		kind = "error"
	}
	s.cfg.logger.WarnContext(ctx, "mcpserver: a response to no request the server sent, ignored",
		"session", session, "id", id, "kind", kind)
}

// sentWatcher is the http.ResponseWriter of a streamable HTTP response: it
// notes, before they reach the client, the requests the server sends the
// session on it (as server-sent events), so that their responses are not
// taken for strays.
type sentWatcher struct {
	http.ResponseWriter
	calls   *pendingCalls
	session string
}

func (w *sentWatcher) Write(b []byte) (int, error) {
	// The SDK writes one whole event per Write: "event: message",
	// "id: ...", "data: <message>", a blank line.
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok || !bytes.Contains(data, []byte(`"method"`)) {
			continue
		}
		if msg, err := jsonrpc.DecodeMessage(data); err == nil {
			if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
				w.calls.sent(w.session, req.ID)
			}
		}
	}
	return w.ResponseWriter.Write(b)
}

// Flush and Unwrap let the SDK flush each event through the watcher.
func (w *sentWatcher) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *sentWatcher) Unwrap() http.ResponseWriter { return w.ResponseWriter }
