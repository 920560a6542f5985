package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MessageTooLargeError is a server that sent one message (a tools/list
// answer, a result) over the limit (WithMaxMessageBytes). The connection is
// dropped as soon as the limit is passed: the rest is never read.
type MessageTooLargeError struct {
	Server string
	Limit  int
}

func (e *MessageTooLargeError) Error() string {
	return fmt.Sprintf("remote: server %q sent a message over %d bytes; the connection was dropped without reading the rest: a tools/list or result that large is a broken or hostile server (raise remote.WithMaxMessageBytes only if the server is trusted and the size expected)", e.Server, e.Limit)
}

// limitReader fails once one message passes limit bytes: a line of the
// newline-delimited stdio stream or of a server-sent event stream, or a
// whole JSON body (lines false).
type limitReader struct {
	r     io.Reader
	limit int
	lines bool
	n     int // bytes of the message so far
	over  func()
	err   error
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	chunk := p[:n]
	if l.lines {
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			// A read is far smaller than the limit: only the line it
			// continues and the line it leaves open can pass it.
			if l.n+i > l.limit {
				return 0, l.fail()
			}
			l.n = n - bytes.LastIndexByte(chunk, '\n') - 1
		} else {
			l.n += n
		}
	} else {
		l.n += n
	}
	if l.n > l.limit {
		return 0, l.fail()
	}
	return n, err
}

func (l *limitReader) fail() error {
	l.err = errTooLarge
	if l.over != nil {
		l.over()
	}
	return l.err
}

func (l *limitReader) Close() error {
	if c, ok := l.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

var errTooLarge = fmt.Errorf("remote: message over the size limit")

// transport makes the transport of a new connection to sv.
func (sv *server) transport() (mcp.Transport, error) {
	c := sv.cfg
	over := func() { sv.tooLarge.Store(true) }
	switch {
	case c.Transport != nil:
		return c.Transport()
	case len(c.Command) > 0:
		return &commandTransport{argv: c.Command, env: c.Env, dir: c.Dir, limit: sv.set.opts.maxMessage, over: over, stderr: &sv.stderr,
			writeTimeout: max(sv.set.opts.connectTimeout, sv.set.opts.callTimeout)}, nil
	default:
		base := http.DefaultTransport
		if c.HTTPClient != nil && c.HTTPClient.Transport != nil {
			base = c.HTTPClient.Transport
		}
		client := &http.Client{Transport: &limitRoundTripper{base: base, header: c.Header, limit: sv.set.opts.maxMessage, over: over}}
		if c.HTTPClient != nil {
			client.Jar, client.CheckRedirect = c.HTTPClient.Jar, c.HTTPClient.CheckRedirect
		}
		return &mcp.StreamableClientTransport{Endpoint: c.URL, HTTPClient: client}, nil
	}
}

// limitRoundTripper adds the configured headers to each request and bounds
// each response: a server-sent event stream event by event, any other body
// whole.
type limitRoundTripper struct {
	base   http.RoundTripper
	header http.Header
	limit  int
	over   func()
}

func (t *limitRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.header) > 0 {
		req = req.Clone(req.Context())
		for k, vs := range t.header {
			req.Header[k] = append([]string(nil), vs...)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	resp.Body = &limitReader{r: resp.Body, limit: t.limit, lines: mt == "text/event-stream", over: t.over}
	return resp, nil
}

// commandTransport starts a stdio server. Its stdout is read through a
// limitReader; the last bytes of its stderr are kept, for the message that
// says it died.
type commandTransport struct {
	argv   []string
	env    []string
	dir    string
	limit  int
	over   func()
	stderr *tail
	// writeTimeout bounds one write to the server's stdin: a server that
	// stops reading must not block a call forever on a full pipe.
	writeTimeout time.Duration
}

func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	cmd := exec.Command(t.argv[0], t.argv[1:]...)
	cmd.Env = append(os.Environ(), t.env...)
	cmd.Dir = t.dir
	cmd.Stderr = t.stderr
	// Pipes of our own, not StdoutPipe: Wait would close that one under the
	// reader and lose the last message of a server that answers and exits.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stdin = outW, inR
	if err := cmd.Start(); err != nil {
		outR.Close()
		outW.Close()
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("starting %q: %w", t.argv[0], err)
	}
	outW.Close()
	inR.Close()
	p := &process{cmd: cmd, stdin: inW, exited: make(chan struct{}), writeTimeout: t.writeTimeout}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	r := &limitReader{r: outR, limit: t.limit, lines: true, over: t.over}
	// The SDK's own cap stays above ours, so that ours, which says so, acts.
	return (&mcp.IOTransport{Reader: r, Writer: p, MaxLineLength: 2*t.limit + 1}).Connect(ctx)
}

// process is a stdio server's stdin; closing it ends the server: stdin is
// closed, and a server that does not exit within a second is killed.
type process struct {
	cmd          *exec.Cmd
	stdin        *os.File
	exited       chan struct{}
	err          error
	once         sync.Once
	writeTimeout time.Duration
}

func (p *process) Write(b []byte) (int, error) {
	if p.writeTimeout > 0 {
		_ = p.stdin.SetWriteDeadline(time.Now().Add(p.writeTimeout))
	}
	n, err := p.stdin.Write(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("the server has not read its stdin for %v: %w", p.writeTimeout, err)
	}
	return n, err
}

func (p *process) Close() error {
	p.once.Do(func() {
		p.stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return nil
}

// tail keeps the last bytes a server wrote to its stderr.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 2048

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailBytes:]...)
	}
	return len(p), nil
}

// String is the kept stderr, trimmed; "" when the server wrote none.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}
