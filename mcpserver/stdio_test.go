package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg/mcpserver"
)

// pipeConn is a server serving over two real OS pipes, as over stdio, and the
// client's ends of them.
type pipeConn struct {
	t    *testing.T
	f    *fixture
	in   *os.File // the client writes here; the server reads its stdin
	out  *os.File // the client reads here; the server writes its stdout
	sc   *bufio.Scanner
	done chan error
}

func servePipes(t *testing.T, tr func(in, out *os.File) mcp.Transport, opts ...mcpserver.Option) *pipeConn {
	t.Helper()
	f := newFixture(t, opts...)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &pipeConn{t: t, f: f, in: inW, out: outR, sc: bufio.NewScanner(outR), done: make(chan error, 1)}
	c.sc.Buffer(nil, 4<<20)
	go func() { c.done <- f.srv.Run(ctx, tr(inR, outW)) }()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
			t.Error("the server did not stop")
		}
	})
	return c
}

// roundTrip writes line and returns the next message the server writes.
func (c *pipeConn) roundTrip(line string) map[string]any {
	c.t.Helper()
	if _, err := c.in.WriteString(line + "\n"); err != nil {
		c.t.Fatalf("writing %.60q: %v (has the server stopped?)", line, err)
	}
	c.out.SetReadDeadline(time.Now().Add(5 * time.Second))
	if !c.sc.Scan() {
		select {
		case err := <-c.done:
			c.t.Fatalf("after %.60q the server stopped: %v", line, err)
		default:
		}
		c.t.Fatalf("after %.60q no answer: %v", line, c.sc.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(c.sc.Bytes(), &m); err != nil {
		c.t.Fatalf("the server wrote a line that is not JSON: %v\n%s", err, c.sc.Bytes())
	}
	return m
}

func errorCode(m map[string]any) (float64, bool) {
	e, ok := m["error"].(map[string]any)
	if !ok {
		return 0, false
	}
	code, _ := e["code"].(float64)
	return code, true
}

const initialize = `{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"v0"}}}`

// hostileLines are what a broken or hostile client writes, and the answer
// each must get: a JSON-RPC error with a standard code, the request's id when
// it can be read (null otherwise), and the server still serving.
var hostileLines = []struct {
	name, line string
	code       float64
	id         any
}{
	{"a line that is not JSON", `hello, server`, -32700, nil},
	{"a Python dict", `{'jsonrpc': '2.0', 'id': 1, 'method': 'ping'}`, -32700, nil},
	{"JSON that is not JSON-RPC", `{"foo":1}`, -32600, nil},
	{"a number", `42`, -32600, nil},
	{"JSON-RPC 1.0", `{"jsonrpc":"1.0","id":9,"method":"ping"}`, -32600, float64(9)},
	{"neither a request nor a response", `{"jsonrpc":"2.0","id":7,"params":{}}`, -32600, float64(7)},
	{"an object as id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, nil},
	{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, -32600, nil},
	{"100k-deep nesting", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), -32600, nil},
	{"100k-deep nesting inside a request", `{"jsonrpc":"2.0","id":11,"method":"ping","params":{"x":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}}`, -32600, nil},
	{"a line over the size limit", `{"jsonrpc":"2.0","id":12,"method":"ping","params":{"x":"` + strings.Repeat("a", 2<<20) + `"}}`, -32600, nil},
	{"a call before initialize", `{"jsonrpc":"2.0","id":13,"method":"tools/list"}`, -32600, float64(13)},
	{"a truncated request", `{"jsonrpc":"2.0","id":14,"method":"tools/li`, -32700, nil},
	{"params the SDK cannot read", `{"jsonrpc":"2.0","id":15,"method":"initialize","params":5}`, -32602, float64(15)},
	// The SDK reads a number id as an int64 through a float64: these would
	// be answered as, and deduplicated with, another id (7, 2^53).
	{"a fractional id", `{"jsonrpc":"2.0","id":7.25,"method":"ping"}`, -32600, nil},
	{"an id beyond 2^53", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, -32600, nil},
	{"an id in exponent form", `{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, -32600, nil},
	// The SDK matches member names exactly: "Id" is not the id, so this
	// request's id is null.
	{"a null id beside an Id", `{"jsonrpc":"2.0","id":null,"Id":5,"method":"ping"}`, -32600, nil},
}

// sdkAnswered are the hostile lines the SDK itself answers (with the code
// LineTransport gives it); the others are answered by LineTransport.
var sdkAnswered = map[string]bool{"a call before initialize": true, "params the SDK cannot read": true}

func checkHostileLines(t *testing.T, c *pipeConn) {
	t.Helper()
	for _, tt := range hostileLines {
		m := c.roundTrip(tt.line)
		code, ok := errorCode(m)
		if !ok || code != tt.code || m["id"] != tt.id || m["jsonrpc"] != "2.0" {
			t.Errorf("%s: answered %v, want error %v with id %v", tt.name, m, tt.code, tt.id)
		}
		e, _ := m["error"].(map[string]any)
		if msg, _ := e["message"].(string); !strings.HasPrefix(msg, "mcpserver: ") && !sdkAnswered[tt.name] {
			t.Errorf("%s: message %q does not say who refused the line", tt.name, msg)
		}
		// Still serving: a ping right after is answered.
		if m := c.roundTrip(`{"jsonrpc":"2.0","id":"p","method":"ping"}`); m["id"] != "p" || m["result"] == nil {
			t.Fatalf("%s: the ping after it got %v", tt.name, m)
		}
	}
	// A response to nothing the server asked is dropped, not fatal.
	if _, err := c.in.WriteString(`{"jsonrpc":"2.0","id":99,"result":{}}` + "\n"); err != nil {
		t.Fatal(err)
	}
	if m := c.roundTrip(`{"jsonrpc":"2.0","id":"q","method":"ping"}`); m["id"] != "q" || m["result"] == nil {
		t.Fatalf("the ping after a stray response got %v", m)
	}
	// The session still works end to end after all of them.
	if m := c.roundTrip(strings.Replace(initialize, "%s", "20", 1)); m["id"] != float64(20) || m["result"] == nil {
		t.Fatalf("initialize after the hostile lines: %v", m)
	}
	if _, err := c.in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	m := c.roundTrip(`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"greet","arguments":{"name":"ada"}}}`)
	res, _ := m["result"].(map[string]any)
	if m["id"] != float64(21) || res == nil || res["isError"] == true {
		t.Fatalf("tools/call after the hostile lines: %v", m)
	}
}

// Over real pipes, through Run with the SDK's own IOTransport: every hostile
// line gets its own JSON-RPC error and the lines after it are served.
func TestStdioSurvivesHostileLines(t *testing.T) {
	t.Parallel()
	c := servePipes(t, func(in, out *os.File) mcp.Transport {
		return &mcp.IOTransport{Reader: in, Writer: out, MaxLineLength: 1 << 20}
	})
	checkHostileLines(t, c)
}

// The same with the package's own transport, configured directly.
func TestLineTransportSurvivesHostileLines(t *testing.T) {
	t.Parallel()
	c := servePipes(t, func(in, out *os.File) mcp.Transport {
		return &mcpserver.LineTransport{In: in, Out: out, MaxLineBytes: 1 << 20, MaxDepth: 64}
	})
	checkHostileLines(t, c)
	// Nesting at the limit is served (the SDK answers it), one deeper is not.
	at := `{"jsonrpc":"2.0","id":30,"method":"ping","params":{"x":` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `}}`
	if m := c.roundTrip(at); m["id"] != float64(30) || m["result"] == nil {
		t.Errorf("64 levels: %v", m)
	}
	over := `{"jsonrpc":"2.0","id":31,"method":"ping","params":{"x":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}}`
	if m := c.roundTrip(over); m["id"] != nil {
		t.Errorf("65 levels: %v", m)
	} else if code, _ := errorCode(m); code != -32600 {
		t.Errorf("65 levels: %v", m)
	}
}
