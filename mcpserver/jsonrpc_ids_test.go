package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg/internal/syncbuf"
	"github.com/beam-agents/toolreg/mcpserver"
)

// warnLogger logs warnings and errors to b, which a test reads while the
// server writes.
func warnLogger(b *syncbuf.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// A null id is what a client means when it has no id to give; MCP forbids
// it ("the ID MUST NOT be null"), and the SDK took such a request for a
// notification, answering nothing. The message says what to send instead.
const nullIDAdvice = `"id" is null, which MCP forbids: give a request a string or number id (or send no "id" for a notification)`

func checkNullIDAnswer(t *testing.T, what string, m map[string]any) {
	t.Helper()
	code, ok := errorCode(m)
	msg, _ := m["error"].(map[string]any)["message"].(string)
	if !ok || code != -32600 || m["id"] != nil || !strings.Contains(msg, nullIDAdvice) {
		t.Errorf("%s with a null id: answered %v, want error -32600, id null, saying %q", what, m, nullIDAdvice)
	}
}

// Over stdio: a request with a null id, before and after initialize (a
// tools/call of a side-effecting tool among them), gets -32600 Invalid
// Request and runs nothing; a response to a request the server never sent
// is logged at warn and ignored, and the session goes on.
func TestANullIDIsRefusedAndAStrayResponseLoggedOverStdio(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	c := servePipes(t, func(in, out *os.File) mcp.Transport {
		return &mcp.IOTransport{Reader: in, Writer: out}
	}, mcpserver.WithLogger(warnLogger(&logs)))
	checkNullIDAnswer(t, "ping", c.roundTrip(`{"jsonrpc":"2.0","id":null,"method":"ping"}`))
	if m := c.roundTrip(strings.Replace(initialize, "%s", "1", 1)); m["id"] != float64(1) || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	if _, err := c.in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	checkNullIDAnswer(t, "tools/call", c.roundTrip(`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"charge","arguments":{"amount":5}}}`))

	for _, stray := range []string{
		`{"jsonrpc":"2.0","id":99,"result":{}}`,
		`{"jsonrpc":"2.0","id":"never-sent","error":{"code":-32603,"message":"boom"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
	} {
		if _, err := c.in.WriteString(stray + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing answers them: the next line out answers the next request.
	if m := c.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"charge","arguments":{"amount":7}}}`); m["id"] != float64(2) || m["result"] == nil {
		t.Fatalf("the call after the stray responses got %v", m)
	}
	if n := c.f.charges.Load(); n != 1 {
		t.Errorf("charge ran %d times, want 1: a null-id call must never run", n)
	}
	waitForLog(t, &logs, 3, "mcpserver: a response to no request the server sent, ignored")
	for _, want := range []string{`id=99`, `id="\"never-sent\""`, `id=null`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not name the stray response's %s:\n%s", want, logs.String())
		}
	}
}

// waitForLog waits until the log holds n lines with msg: a stray response
// is logged by the reading goroutine, after the answers around it.
func waitForLog(t *testing.T, logs *syncbuf.Buffer, n int, msg string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(logs.String(), msg) < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := strings.Count(logs.String(), msg); got != n {
		t.Errorf("the log has %d lines %q, want %d:\n%s", got, msg, n, logs.String())
	}
}

// Over streamable HTTP, the same with raw POSTs: a null-id request gets
// HTTP 400 and a JSON-RPC -32600 body and runs nothing; a stray response is
// accepted (202, as the transport acknowledges any response), logged and
// ignored.
func TestANullIDIsRefusedAndAStrayResponseLoggedOverStreamableHTTP(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	f := newFixture(t, mcpserver.WithLogger(warnLogger(&logs)))
	hs := httptest.NewServer(f.srv.Handler(nil))
	t.Cleanup(hs.Close)
	c := &rawHTTP{t: t, url: hs.URL, version: "2025-06-18"}
	post := c.post
	answer := func(body string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("not a JSON-RPC message: %v: %q", err, body)
		}
		return m
	}

	code, body := post(`{"jsonrpc":"2.0","id":null,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"v0"}}}`)
	if code != http.StatusBadRequest {
		t.Errorf("initialize with a null id: HTTP %d, want 400", code)
	}
	checkNullIDAnswer(t, "initialize", answer(body))
	if code, body := post(strings.Replace(initialize, "%s", "1", 1)); code != http.StatusOK || answer(body)["result"] == nil {
		t.Fatalf("initialize: HTTP %d %s", code, body)
	}
	if code, _ := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d", code)
	}
	code, body = post(`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"charge","arguments":{"amount":5}}}`)
	if code != http.StatusBadRequest {
		t.Errorf("tools/call with a null id: HTTP %d, want 400", code)
	}
	checkNullIDAnswer(t, "tools/call", answer(body))

	for _, stray := range []string{
		`{"jsonrpc":"2.0","id":99,"result":{}}`,
		`{"jsonrpc":"2.0","id":"never-sent","error":{"code":-32603,"message":"boom"}}`,
	} {
		if code, body := post(stray); code != http.StatusAccepted {
			t.Errorf("a stray response: HTTP %d %s, want 202", code, body)
		}
	}
	code, body = post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"charge","arguments":{"amount":7}}}`)
	if m := answer(body); code != http.StatusOK || m["id"] != float64(2) || m["result"] == nil {
		t.Fatalf("the call after the stray responses: HTTP %d %v", code, m)
	}
	if n := f.charges.Load(); n != 1 {
		t.Errorf("charge ran %d times, want 1: a null-id call must never run", n)
	}
	waitForLog(t, &logs, 2, "mcpserver: a response to no request the server sent, ignored")
	if !strings.Contains(logs.String(), "session="+c.session) {
		t.Errorf("the log does not name the session %s:\n%s", c.session, logs.String())
	}
	_ = context.Background
}

// Over streamable HTTP, what the server cannot answer under the request's
// own id, or cannot stamp with it, is refused with HTTP 400 and -32600 and
// runs nothing: a batch (which the SDK accepts at protocol versions before
// 2025-06-18, and which went past the stamp: the same call delivered twice
// ran twice, and a client's own _meta id was believed), a fractional id, an
// id beyond 2^53, and a null id beside an "Id". A body over the size the
// server stamps is refused with 413. The calls after them run once each.
func TestWhatCannotBeStampedIsRefusedOverStreamableHTTP(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	hs := httptest.NewServer(f.srv.Handler(nil))
	t.Cleanup(hs.Close)
	const version = "2025-03-26"
	c := &rawHTTP{t: t, url: hs.URL, version: version}
	post := func(body string) (int, map[string]any) {
		t.Helper()
		code, text := c.post(body)
		var m map[string]any
		_ = json.Unmarshal([]byte(text), &m)
		return code, m
	}
	init := strings.Replace(strings.Replace(initialize, "%s", "1", 1), "2025-06-18", version, 1)
	if code, m := post(init); code != http.StatusOK || m["result"] == nil {
		t.Fatalf("initialize: HTTP %d %v", code, m)
	}
	if code, _ := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d", code)
	}
	call := func(id string, meta string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"charge","arguments":{"amount":5}` + meta + `}}`
	}
	for _, tt := range []struct{ name, body, says string }{
		{"a batch", "[" + call("7", "") + "]", "batches are not supported"},
		{"a batch with a forged _meta id", "[" + call("9", `,"_meta":{"toolreg/jsonrpc-id":"8"}`) + "]", "batches are not supported"},
		{"a batch after spaces", " \n [" + call("10", "") + "]", "batches are not supported"},
		{"a fractional id", call("7.25", ""), "not an integer"},
		{"an id beyond 2^53", call("9007199254740993", ""), "not an integer"},
		{"a null id beside an Id", `{"jsonrpc":"2.0","id":null,"Id":5,"method":"tools/call","params":{"name":"charge","arguments":{"amount":5}}}`, "is null"},
		// The SDK serves the first JSON value of a body and ignores what
		// follows, which kept the id check from reading it.
		{"bytes after the JSON", call("7.25", "") + " x", "not JSON"},
		{"a brace after the JSON", call("7.75", "") + "}", "not JSON"},
	} {
		want := -32600.0
		if strings.HasPrefix(tt.says, "not JSON") {
			want = -32700
		}
		for range 2 { // delivered twice, as a retry does
			code, m := post(tt.body)
			errObj, _ := m["error"].(map[string]any)
			msg, _ := errObj["message"].(string)
			if c, _ := errorCode(m); code != http.StatusBadRequest || c != want || m["id"] != nil || !strings.Contains(msg, tt.says) {
				t.Errorf("%s: HTTP %d %v, want 400 with error %v, id null, saying %q", tt.name, code, m, want, tt.says)
			}
		}
	}
	if n := f.charges.Load(); n != 0 {
		t.Fatalf("charge ran %d times for requests refused", n)
	}
	big := call("11", `,"_meta":{"pad":"`+strings.Repeat("a", 8<<20)+`"}`)
	if code, m := post(big); code != http.StatusRequestEntityTooLarge || m["error"] == nil {
		t.Errorf("a body over 8 MiB: HTTP %d %v, want 413 with a JSON-RPC error", code, m)
	}
	// Then the same call twice, and the id 8 the batch forged: each id runs once.
	for _, id := range []string{"8", "8", "9"} {
		if code, m := post(call(id, "")); code != http.StatusOK || m["result"] == nil {
			t.Fatalf("call %s: HTTP %d %v", id, code, m)
		}
	}
	if n := f.charges.Load(); n != 2 {
		t.Errorf("calls 8, 8 (a retry) and 9 ran charge %d times, want 2", n)
	}
}

// A handler given a body limit above the 8 MiB the server stamps by
// default stamps bodies up to that limit: a 9 MiB call the operator allowed
// reaches the server (which answers it: here its arguments are over the
// tool's own limit), not refused with 413.
func TestAConfiguredBodyLimitAboveTheDefaultIsServed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	hs := httptest.NewServer(f.srv.Handler(&mcp.StreamableHTTPOptions{MaxRequestBodyBytes: 32 << 20}))
	t.Cleanup(hs.Close)
	c, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": strings.Repeat("a", 9<<20)}})
	if err != nil || res == nil {
		t.Fatalf("a 9 MiB call under a 32 MiB limit was not served: %v", err)
	}
}

// rawHTTP posts JSON-RPC messages to a streamable HTTP server as a client
// without an SDK would, at protocol version, in the session the server
// gives.
type rawHTTP struct {
	t                     *testing.T
	url, version, session string
}

// post sends body and returns the status and the answer's JSON text: the
// data of its SSE event, or the body.
func (c *rawHTTP) post(body string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.session = id
	}
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			return resp.StatusCode, data
		}
	}
	return resp.StatusCode, strings.TrimSpace(string(b))
}
