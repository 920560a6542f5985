package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of LineTransport.
const (
	// DefaultMaxLineBytes bounds one line, as the SDK's own stdio transport
	// does by default.
	DefaultMaxLineBytes = mcp.DefaultMaxLineLength
	// DefaultMaxDepth bounds the nesting of arrays and objects in one message.
	DefaultMaxDepth = 128
)

// LineTransport serves MCP over newline-delimited JSON-RPC on In and Out, in
// front of the SDK: one message a line, each line judged on its own, so a bad
// line costs only itself. The SDK's own stdio transport ends the session on
// the first line that is not JSON, and a truncated line swallows the lines
// after it; LineTransport instead answers, and keeps serving:
//
//   - a line that is not JSON (a truncated one included) with a JSON-RPC
//     parse error, -32700, id null;
//   - JSON that is not one JSON-RPC 2.0 request, notification or response
//     (a batch, a wrong version tag, an id that is not a string or number)
//     with invalid request, -32600, and the line's id when it has one;
//   - a request whose "id" is null, which MCP forbids (the SDK would take
//     it for a notification and answer nothing), with -32600, id null, and
//     a message saying to send a string or number id;
//   - a line longer than MaxLineBytes or nested deeper than MaxDepth with
//     -32600, id null, without decoding it: the rest of an overlong line is
//     skipped, not buffered;
//   - a call the SDK refuses before initialize (which it answers with code
//     0) with -32600, params it cannot decode with invalid params, -32602;
//     any other error without a JSON-RPC code goes out as internal error,
//     -32603.
//
// A response with no id, or a null one, is passed on with an invalid id:
// it answers nothing the server sent, and the server logs and drops it (see
// the package doc). Empty lines are skipped. Run and Connect use a
// LineTransport in place of an *mcp.StdioTransport or *mcp.IOTransport they
// are given.
type LineTransport struct {
	// In is read one line at a time; the default is os.Stdin.
	In io.ReadCloser
	// Out gets one message a line; the default is os.Stdout.
	Out io.WriteCloser
	// MaxLineBytes bounds a line, newline excluded. The default (0) is
	// DefaultMaxLineBytes (16 MiB); a negative value means no bound.
	MaxLineBytes int
	// MaxDepth bounds the nesting of arrays and objects in a message. The
	// default (0) is DefaultMaxDepth (128); a negative value means no bound.
	MaxDepth int
}

// StdioTransport returns a LineTransport over os.Stdin and os.Stdout with
// the default bounds.
func StdioTransport() *LineTransport { return &LineTransport{} }

var _ mcp.Transport = (*LineTransport)(nil)

// Connect implements mcp.Transport.
func (t *LineTransport) Connect(context.Context) (mcp.Connection, error) {
	in, out := t.In, t.Out
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = nopCloser{os.Stdout}
	}
	maxLine, maxDepth := t.MaxLineBytes, t.MaxDepth
	if maxLine == 0 {
		maxLine = DefaultMaxLineBytes
	}
	if maxDepth == 0 {
		maxDepth = DefaultMaxDepth
	}
	c := &lineConn{in: in, out: out, maxLine: maxLine, maxDepth: maxDepth,
		incoming: make(chan readResult), closed: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

// lineTransport returns the LineTransport to use in place of t, or t.
func lineTransport(t mcp.Transport) mcp.Transport {
	switch x := t.(type) {
	case *mcp.StdioTransport:
		return &LineTransport{MaxLineBytes: x.MaxLineLength}
	case *mcp.IOTransport:
		return &LineTransport{In: x.Reader, Out: x.Writer, MaxLineBytes: x.MaxLineLength}
	}
	return t
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

type readResult struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	in                io.ReadCloser
	out               io.WriteCloser
	maxLine, maxDepth int

	writeMu sync.Mutex

	incoming  chan readResult
	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// readLoop reads lines until In ends, answering bad ones itself and handing
// the others to Read. It runs in its own goroutine so that Close unblocks a
// Read waiting on it.
func (c *lineConn) readLoop() {
	r := bufio.NewReaderSize(c.in, 64<<10)
	for {
		line, tooLong, err := c.readLine(r)
		if len(line) > 0 || tooLong {
			if msg := c.judge(line, tooLong); msg != nil {
				select {
				case c.incoming <- readResult{msg: msg}:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			select {
			case c.incoming <- readResult{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// readLine returns the next line without its line ending, or reports that it
// was longer than maxLine (and skips the rest of it). At the end of In, a
// last line without a newline is returned with io.EOF.
func (c *lineConn) readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if c.maxLine >= 0 && len(buf)+len(chunk) > c.maxLine+2 { // room for \r\n
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		buf = bytes.TrimRight(buf, "\r\n")
		if !tooLong && c.maxLine >= 0 && len(buf) > c.maxLine {
			tooLong, buf = true, nil
		}
		return buf, tooLong, err
	}
}

// judge returns the line's message, or answers the line itself and returns
// nil.
func (c *lineConn) judge(line []byte, tooLong bool) jsonrpc.Message {
	if tooLong {
		c.refuse(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("mcpserver: a line of more than %d bytes: send smaller messages, one a line", c.maxLine))
		return nil
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	if c.maxDepth >= 0 {
		if d := depth(line, c.maxDepth); d > c.maxDepth {
			c.refuse(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("mcpserver: a message nested more than %d arrays and objects deep: flatten it", c.maxDepth))
			return nil
		}
	}
	if !json.Valid(line) {
		c.refuse(nil, jsonrpc.CodeParseError, "mcpserver: a line that is not JSON ("+syntaxError(line)+"): send one JSON-RPC 2.0 message a line")
		return nil
	}
	if line[0] == '[' {
		c.refuse(nil, jsonrpc.CodeInvalidRequest, "mcpserver: a JSON-RPC batch: batches are not supported (MCP removed them in 2025-06-18); send one message a line")
		return nil
	}
	m := readEnvelope(line) // an object or not: decided below
	method, result, errObj, id := m["method"], m["result"], m["error"], m["id"]
	if string(method) == "null" {
		method = nil
	}
	if string(errObj) == "null" {
		errObj = nil
	}
	if method != nil {
		if problem := requestIDProblem(id); problem != "" {
			c.refuse(nil, jsonrpc.CodeInvalidRequest, problem)
			return nil
		}
	}
	if method == nil && (result != nil || errObj != nil) && (id == nil || string(id) == "null") && string(m["jsonrpc"]) == `"2.0"` {
		// A response with no id answers nothing the server sent: the
		// server logs it as a stray, and nothing answers a response.
		resp := &jsonrpc.Response{Result: result}
		if errObj != nil {
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError}
			_ = json.Unmarshal(errObj, resp.Error)
		}
		return resp
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err == nil && method == nil && result == nil && errObj == nil {
		err = errors.New(`neither "method" nor "result" nor "error"`)
	}
	if err != nil {
		c.refuse(idOf(id), jsonrpc.CodeInvalidRequest, "mcpserver: not a JSON-RPC 2.0 request, notification or response: "+err.Error())
		return nil
	}
	return msg
}

// idOf returns a request's id as JSON text when it is one JSON-RPC allows,
// a string or a number; else null.
func idOf(raw json.RawMessage) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && (raw[0] == '"' || raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		return raw
	}
	return nil
}

// depth returns the nesting depth of the JSON text b, stopping once it
// passes limit.
func depth(b []byte, limit int) int {
	d, top, inString, escaped := 0, 0, false, false
	for _, ch := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case ch == '\\':
				escaped = true
			case ch == '"':
				inString = false
			}
		case ch == '"':
			inString = true
		case ch == '[' || ch == '{':
			d++
			if d > top {
				top = d
				if top > limit {
					return top
				}
			}
		case ch == ']' || ch == '}':
			d--
		}
	}
	return top
}

// syntaxError says where b stops being JSON.
func syntaxError(b []byte) string {
	var v any
	err := json.Unmarshal(b, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("at byte offset %d", se.Offset-1)
	}
	return "it ends before the value is complete"
}

// refuse writes a JSON-RPC error response with id (JSON text; nil is null).
func (c *lineConn) refuse(id []byte, code int64, msg string) {
	if id == nil {
		id = []byte("null")
	}
	m, _ := json.Marshal(msg)
	b := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`+"\n", id, code, m)
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.out.Write(b) // a client that stopped reading loses its answer; Read sees the end
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	}
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error != nil {
		resp.Error = codedError(resp.Error)
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return io.ErrClosedPipe
	default:
	}
	_, err = c.out.Write(b)
	return err
}

// codedError gives an error without a JSON-RPC code (the SDK sends such
// errors with code 0) a standard one: invalid request for a call before
// initialize, internal error for anything else.
func codedError(err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) && we.Code != 0 {
		return err
	}
	code := int64(jsonrpc.CodeInternalError)
	switch msg := err.Error(); {
	case strings.Contains(msg, "during session initialization"):
		code = jsonrpc.CodeInvalidRequest
	case strings.Contains(msg, "unmarshaling"):
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: err.Error()}
}

func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = errors.Join(c.in.Close(), c.out.Close())
	})
	return c.closeErr
}

func (c *lineConn) SessionID() string { return "" }
