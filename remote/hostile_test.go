package remote_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/syncbuf"
	"github.com/beam-agents/toolreg/remote"
	"github.com/beam-agents/toolreg/runner"
)

// The test binary is also the stdio servers the tests start: run with
// TOOLREG_REMOTE_TEST_SERVER=mode, it serves on stdin and stdout, keeping
// what it must remember in the directory TOOLREG_REMOTE_TEST_STATE.
func TestMain(m *testing.M) {
	if mode := os.Getenv("TOOLREG_REMOTE_TEST_SERVER"); mode != "" {
		os.Exit(serveStdio(mode, os.Getenv("TOOLREG_REMOTE_TEST_STATE")))
	}
	os.Exit(m.Run())
}

// stdioServer is a remote.Server that starts this test binary as the stdio
// server of mode.
func stdioServer(t testing.TB, mode string) (remote.Server, string) {
	state := t.TempDir()
	return remote.Server{Command: []string{os.Args[0], "-test.run=^$"},
		Env: []string{"TOOLREG_REMOTE_TEST_SERVER=" + mode, "TOOLREG_REMOTE_TEST_STATE=" + state}}, state
}

func serveStdio(mode, state string) int {
	switch mode {
	case "shop", "die-once":
		s := newShopServer()
		if mode == "die-once" {
			// The first process dies on its first call, without answering;
			// the one started after it serves.
			s.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if method == "tools/call" {
						if _, err := os.Stat(filepath.Join(state, "died")); err != nil {
							_ = os.WriteFile(filepath.Join(state, "died"), nil, 0o644)
							fmt.Fprintln(os.Stderr, "shop: out of memory")
							os.Exit(3)
						}
					}
					return next(ctx, method, req)
				}
			})
		}
		if err := s.srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			return 1
		}
		return 0
	case "big-tools-list":
		keepWritingAfterEPIPE()
		return rawServer(os.Stdin, os.Stdout, state)
	}
	fmt.Fprintf(os.Stderr, "unknown mode %q\n", mode)
	return 2
}

// bigBytes is the size of the hostile tools/list.
const bigBytes = 100 << 20

// rawServer speaks just enough MCP, line by line, to answer tools/list with
// a description of bigBytes: it writes as much as its client reads, and
// records how much that was in state/written.
func rawServer(in io.Reader, out io.Writer, state string) int {
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return 0
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &req) != nil || req.ID == nil {
			continue // a notification
		}
		switch req.Method {
		case "initialize":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"big","version":"1"}}}`+"\n", req.ID)
		case "tools/list":
			n := writeBig(out, req.ID)
			if state != "" {
				_ = os.WriteFile(filepath.Join(state, "written"), []byte(strconv.FormatInt(n, 10)), 0o644)
			}
			return 0
		default:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", req.ID)
		}
	}
}

// writeBig writes a tools/list answer of bigBytes, returning how many bytes
// the reader took before it stopped reading.
func writeBig(w io.Writer, id json.RawMessage) int64 {
	var n int64
	write := func(b []byte) bool {
		k, err := w.Write(b)
		n += int64(k)
		return err == nil
	}
	if !write(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"x","inputSchema":{"type":"object"},"description":"`, id)) {
		return n
	}
	chunk := []byte(strings.Repeat("a", 64<<10))
	for i := 0; i < bigBytes/len(chunk); i++ {
		if !write(chunk) {
			return n
		}
	}
	write([]byte(`"}]}}` + "\n"))
	return n
}

// Hostile server 6: a 100 MB tools/list, over stdio and over streamable
// HTTP. Connect fails with a *MessageTooLargeError once the limit is
// passed, having read no more than the limit and the transport's buffers.
func TestAHundredMegabyteToolsListIsCutOff(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	spec := &toolreg.Spec{Name: "x", Description: "X.", Remote: &toolreg.Remote{Server: "big", Tool: "x"}, Pos: toolreg.Pos{File: "x.yaml", Line: 1}}
	check := func(t *testing.T, srv remote.Server, written func() int64) {
		start := time.Now()
		_, err := remote.Connect(context.Background(), []*toolreg.Spec{spec}, remote.Servers{"big": srv}, remote.WithLogger(nil), remote.WithMaxMessageBytes(limit))
		var tl *remote.MessageTooLargeError
		if !errors.As(err, &tl) || tl.Limit != limit {
			t.Fatalf("Connect = %v, want a *remote.MessageTooLargeError", err)
		}
		mustContain(t, "the error", err.Error(), `server "big" sent a message over 1048576 bytes`)
		eventually(t, "the server reports how much it wrote", func() bool { return written() >= 0 })
		if n := written(); n > 8*limit {
			t.Errorf("the server wrote %d bytes before the client stopped reading: want about the limit, %d", n, limit)
		}
		t.Logf("cut off after %v; the server wrote %d bytes", time.Since(start), written())
	}
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		srv, state := stdioServer(t, "big-tools-list")
		check(t, srv, func() int64 {
			b, err := os.ReadFile(filepath.Join(state, "written"))
			if err != nil {
				return -1
			}
			n, _ := strconv.ParseInt(string(b), 10, 64)
			return n
		})
	})
	t.Run("streamable HTTP", func(t *testing.T) {
		t.Parallel()
		var written atomic.Int64
		written.Store(-1)
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.NewDecoder(r.Body).Decode(&req)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "s1")
			switch {
			case req.ID == nil:
				w.WriteHeader(http.StatusAccepted)
			case req.Method == "initialize":
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"big","version":"1"}}}`, req.ID)
			case req.Method == "tools/list":
				written.Store(writeBig(w, req.ID))
			default:
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID)
			}
		}))
		defer ts.Close()
		check(t, remote.Server{URL: ts.URL}, written.Load)
	})
}

// Hostile server 5: one that hangs. At startup, Connect gives up after
// WithConnectTimeout, saying so; a call that hangs ends after
// WithCallTimeout, or when its caller cancels it (the server is told, with
// notifications/cancelled), with a clear error, and the effector records
// ERROR, effect unknown, never OK.
func TestAServerThatHangs(t *testing.T) {
	t.Parallel()
	t.Run("at startup", func(t *testing.T) {
		t.Parallel()
		spec := &toolreg.Spec{Name: "x", Description: "X.", Remote: &toolreg.Remote{Server: "mute", Tool: "x"}}
		mute := remote.Server{Transport: func() (mcp.Transport, error) {
			inR, _ := io.Pipe() // it reads every request, and never answers
			return &mcp.IOTransport{Reader: inR, Writer: discard{}}, nil
		}}
		start := time.Now()
		_, err := remote.Connect(context.Background(), []*toolreg.Spec{spec}, remote.Servers{"mute": mute}, remote.WithLogger(nil), remote.WithConnectTimeout(300*time.Millisecond))
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Connect took %v", d)
		}
		mustContain(t, "the error", errString(err), `remote: server "mute": connecting: no answer within 300ms (remote.WithConnectTimeout)`)
	})

	s := newShop(t)
	_, specs := pin(t, "shop", s.server(), "lookup_order", "ping")
	cancelled := make(chan string, 4)
	hang := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		cancelled <- req.Params.Name
		return nil, ctx.Err()
	}
	s.add(&mcp.Tool{Name: "lookup_order", Title: "Look up an order", Description: "Look up an order by its id.",
		InputSchema: json.RawMessage(lookupIn), OutputSchema: json.RawMessage(lookupOut),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}}, hang)
	s.add(&mcp.Tool{Name: "refund_order", Description: "Refund all or part of a paid order.",
		InputSchema: json.RawMessage(refundIn), OutputSchema: json.RawMessage(refundOut),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, hang)
	_, bound := bindAll(t, specs, remote.Servers{"shop": s.server()}, remote.WithCallTimeout(300*time.Millisecond))
	args := json.RawMessage(`{"order_id":"ord_1"}`)

	t.Run("a call past WithCallTimeout", func(t *testing.T) {
		start := time.Now()
		_, err := runner.NewActivation(bound.Pipeline, []byte("k"), 1).RunTool(context.Background(), "lookup_order", args)
		var ce *remote.CallError
		if !errors.As(err, &ce) || !ce.Sent || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("RunTool = %v, want a sent *remote.CallError that timed out", err)
		}
		mustContain(t, "the error", err.Error(), `tool "lookup_order" of server "shop" was called and no answer came: no answer within 300ms`)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the call took %v", d)
		}
		if got := waitFor(t, cancelled); got != "lookup_order" {
			t.Errorf("the server was told to cancel %q", got)
		}
	})
	t.Run("a call its caller cancels", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := runner.NewActivation(bound.Pipeline, []byte("k"), 1).RunTool(ctx, "lookup_order", args)
		if !errors.Is(err, context.Canceled) || !strings.Contains(errString(err), "the call was cancelled on the server") {
			t.Fatalf("RunTool = %v, want context.Canceled", err)
		}
		if got := waitFor(t, cancelled); got != "lookup_order" {
			t.Errorf("the server was told to cancel %q", got)
		}
	})
	t.Run("an effect with no answer", func(t *testing.T) {
		r := process(t, bound, newStore(), "refund_order", `{"order_id":"ord_1","amount":5}`, effector.WithToolTimeout("refund_order", 2*time.Second))
		if r.Status != intent.StatusError {
			t.Fatalf("the effector recorded %v %s", r.Status, r.Payload)
		}
		mustContain(t, "the effector's result", r.ErrorMessage, "effect unknown", `tool "refund_order" of server "shop" was called and no answer came`)
		waitFor(t, cancelled)
	})
}

func waitFor(t testing.TB, c chan string) string {
	t.Helper()
	select {
	case s := <-c:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("nothing within 10s")
		return ""
	}
}

// A stdio server that dies mid-call: the call fails at once with a clear
// error, the effector records ERROR, effect unknown, the server's tools are
// suspended (a call is refused, nothing sent), and once the server is
// started again and its tools checked, they are offered again.
func TestAServerThatDiesMidCall(t *testing.T) {
	t.Parallel()
	srv, _ := stdioServer(t, "shop")
	_, specs := pin(t, "shop", srv, "lookup_order", "ping")
	t.Run("a read", func(t *testing.T) {
		t.Parallel()
		dying, _ := stdioServer(t, "die-once")
		_, bound := bindAll(t, specs, remote.Servers{"shop": dying}, remote.WithReconnect(10*time.Millisecond, 100*time.Millisecond))
		act := runner.NewActivation(bound.Pipeline, []byte("k"), 1)
		_, err := act.RunTool(context.Background(), "lookup_order", json.RawMessage(`{"order_id":"ord_1"}`))
		var ce *remote.CallError
		if !errors.As(err, &ce) || !ce.Sent {
			t.Fatalf("RunTool = %v, want a sent *remote.CallError", err)
		}
		mustContain(t, "the error", err.Error(), `tool "lookup_order" of server "shop" was called and no answer came`)
		_, err = bound.Pipeline.Get("lookup_order")
		var we *toolreg.ToolWithdrawnError
		if !errors.As(err, &we) || !we.Temporary {
			t.Errorf("right after the loss: Get = %v, want the tool suspended", err)
		}
		eventually(t, "the tools offered again", func() bool {
			_, err := bound.Pipeline.Get("lookup_order")
			var we *toolreg.ToolWithdrawnError
			if errors.As(err, &we) && !we.Temporary {
				t.Fatalf("a lost server's tool was withdrawn for good: %v", err)
			}
			return err == nil
		})
		res, err := act.RunTool(context.Background(), "lookup_order", json.RawMessage(`{"order_id":"ord_1"}`))
		if err != nil || string(res.(json.RawMessage)) != `{"amount":42.5,"status":"paid"}` {
			t.Errorf("after the restart: %s, %v", res, err)
		}
	})
	t.Run("an effect", func(t *testing.T) {
		t.Parallel()
		dying, _ := stdioServer(t, "die-once")
		var logs syncbuf.Buffer
		_, bound := bindAll(t, specs, remote.Servers{"shop": dying}, remote.WithLogger(textLogger(&logs)))
		r := process(t, bound, newStore(), "refund_order", `{"order_id":"ord_1","amount":5}`)
		if r.Status != intent.StatusError {
			t.Fatalf("the effector recorded %v %s", r.Status, r.Payload)
		}
		mustContain(t, "the effector's result", r.ErrorMessage, "remote: effect unknown", "was called and no answer came", "it may have run")
		eventually(t, "the loss logged with the server's last words", func() bool {
			return strings.Contains(logs.String(), "shop: out of memory")
		})
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Close() error                { return nil }

// A gateway in front of a streamable HTTP server that loses the answer of a
// call the server ran (502, 504, a dropped connection): the SDK reports it
// as a JSON-RPC error of its own (-32005, "rejected by transport"), which
// was taken for the server's refusal, so an effect that ran was recorded
// as refused, with no "effect unknown". It is a call sent and unanswered:
// a *remote.CallError, naming what the transport saw.
func TestAGatewayThatLosesTheAnswer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ mode, says string }{
		{"502", "Bad Gateway"},
		{"504", "Gateway Timeout"},
		{"drop", "EOF"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			s := newShop(t)
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, nil)
			var lose atomic.Bool
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(strings.NewReader(string(body)))
				if !lose.Load() || r.Method != http.MethodPost || !strings.Contains(string(body), `"tools/call"`) {
					h.ServeHTTP(w, r)
					return
				}
				h.ServeHTTP(httptest.NewRecorder(), r) // the server runs the call; its answer is lost
				switch tt.mode {
				case "502":
					w.WriteHeader(http.StatusBadGateway)
				case "504":
					w.WriteHeader(http.StatusGatewayTimeout)
				case "drop":
					c, _, err := w.(http.Hijacker).Hijack()
					if err != nil {
						t.Error(err)
						return
					}
					c.Close()
				}
			}))
			t.Cleanup(ts.Close)
			srv := remote.Server{URL: ts.URL}
			_, specs := pin(t, "shop", srv, "lookup_order", "ping")
			_, bound := bindAll(t, specs, remote.Servers{"shop": srv}, remote.WithCallTimeout(5*time.Second))
			lose.Store(true)

			_, err := runner.NewActivation(bound.Pipeline, []byte("k"), 1).RunTool(context.Background(), "lookup_order", json.RawMessage(`{"order_id":"ord_1"}`))
			var ce *remote.CallError
			if !errors.As(err, &ce) || !ce.Sent {
				t.Fatalf("a read whose answer was lost: %v, want a sent *remote.CallError", err)
			}
			mustContain(t, "the read's error", err.Error(), `tool "lookup_order" of server "shop" was called and no answer came`, tt.says)

			r := process(t, bound, newStore(), "refund_order", `{"order_id":"ord_1","amount":5}`)
			if n := len(s.callsTo("refund_order")); n != 1 {
				t.Fatalf("the refund reached the server %d times, want 1", n)
			}
			if r.Status != intent.StatusError {
				t.Fatalf("the effector recorded %v %s", r.Status, r.Payload)
			}
			mustContain(t, "the effector's result", r.ErrorMessage, "effect unknown", tt.says)
		})
	}
}

// A server that pages its tools/list without end: every page empty, with a
// next cursor (the same one, or always a new one). WithMaxTools counts
// tools, so the client paged until the connect timeout and then said the
// server had not answered. A cursor seen before, or more pages than
// WithMaxTools allows tools, ends the list with an error that says so.
func TestAServerThatPagesWithoutEnd(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		next func(n int) string
		says string
	}{
		{"the same cursor", func(int) string { return "again" }, `its tools/list gave cursor "again" twice`},
		{"a new cursor every page", func(n int) string { return "page-" + strconv.Itoa(n) }, "its tools/list ran past 110 pages"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newShop(t)
			_, specs := pin(t, "shop", s.server(), "lookup_order", "ping")
			var pages atomic.Int32
			s.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if method == "tools/list" {
						return &mcp.ListToolsResult{Tools: []*mcp.Tool{}, NextCursor: tt.next(int(pages.Add(1)))}, nil
					}
					return next(ctx, method, req)
				}
			})
			start := time.Now()
			_, err := remote.Connect(context.Background(), specs, remote.Servers{"shop": s.server()}, remote.WithLogger(nil),
				remote.WithConnectTimeout(20*time.Second), remote.WithMaxTools(100))
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("Connect took %v", d)
			}
			mustContain(t, "the error", errString(err), `remote: server "shop"`, tt.says)
			if strings.Contains(errString(err), "no answer within") {
				t.Errorf("the error blames a timeout: %v", err)
			}
		})
	}
}

// Close while a call is in flight to a server that never answers it and
// ignores its cancellation: Close waited for the call's whole timeout (the
// SDK's session close waits for outstanding calls), 60 s by default per
// call. Close now ends the calls in flight first, which fail at once, an
// effect's with "effect unknown".
func TestCloseEndsTheCallsInFlight(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	_, specs := pin(t, "shop", s.server(), "lookup_order", "ping")
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	deaf := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-stuck // deaf to its context
		return nil, errors.New("too late")
	}
	s.add(&mcp.Tool{Name: "lookup_order", Title: "Look up an order", Description: "Look up an order by its id.",
		InputSchema: json.RawMessage(lookupIn), OutputSchema: json.RawMessage(lookupOut),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}}, deaf)
	set, bound := bindAll(t, specs, remote.Servers{"shop": s.server()}, remote.WithCallTimeout(20*time.Second))
	called := make(chan error, 1)
	go func() {
		_, err := runner.NewActivation(bound.Pipeline, []byte("k"), 1).RunTool(context.Background(), "lookup_order", json.RawMessage(`{"order_id":"ord_1"}`))
		called <- err
	}()
	eventually(t, "the call reaching the server", func() bool { return len(s.callsTo("lookup_order")) == 1 })
	start := time.Now()
	set.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v with a call in flight", d)
	}
	select {
	case err := <-called:
		var ce *remote.CallError
		if !errors.As(err, &ce) || !ce.Sent {
			t.Fatalf("the call in flight: %v, want a sent *remote.CallError", err)
		}
		mustContain(t, "the call's error", err.Error(), "the remote servers were closed")
	case <-time.After(5 * time.Second):
		t.Fatal("the call in flight did not end when the Set was closed")
	}
}

// A streamable HTTP server that is gone (its port refuses connections): a
// call is not sent, so an effect's result says nothing was sent, not
// "effect unknown"; and the server's tools are suspended until it is back
// and checked, as for a lost stdio server. The SDK reports the failed dial
// as its own JSON-RPC error, the same as a gateway's 502.
func TestAStreamableHTTPServerThatIsGone(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, nil))
	srv := remote.Server{URL: ts.URL}
	_, specs := pin(t, "shop", srv, "lookup_order", "ping")
	_, bound := bindAll(t, specs, remote.Servers{"shop": srv}, remote.WithCallTimeout(5*time.Second), remote.WithReconnect(50*time.Millisecond, 200*time.Millisecond))
	ts.CloseClientConnections()
	ts.Close()

	r := process(t, bound, newStore(), "refund_order", `{"order_id":"ord_1","amount":5}`)
	if r.Status != intent.StatusError || strings.Contains(r.ErrorMessage, "effect unknown") {
		t.Errorf("the effector recorded %v %q; want ERROR, not effect unknown: nothing could be sent", r.Status, r.ErrorMessage)
	}
	mustContain(t, "the effector's result", r.ErrorMessage, "was not called", "nothing was sent")
	eventually(t, "the gone server's tools suspended", func() bool {
		_, err := bound.Pipeline.Get("lookup_order")
		var we *toolreg.ToolWithdrawnError
		return errors.As(err, &we) && we.Temporary
	})
}
