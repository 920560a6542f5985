package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

type bufCloser struct{ bytes.Buffer }

func (*bufCloser) Close() error { return nil }

// refDepth is the nesting depth of valid JSON, by encoding/json's tokens.
func refDepth(b []byte) int {
	d := json.NewDecoder(bytes.NewReader(b))
	cur, top := 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return top
		}
		if err != nil {
			return -1
		}
		if delim, ok := tok.(json.Delim); ok {
			if delim == '[' || delim == '{' {
				cur++
				top = max(top, cur)
			} else {
				cur--
			}
		}
	}
}

// Every line is either handed to the SDK as the message it decodes to, or
// answered with exactly one JSON-RPC 2.0 error line of a standard code.
func FuzzJudgeLine(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `hello`, `{"foo":1}`, `[1]`, `{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`,
		`{"jsonrpc":"2.0","id":7,"params":{}}`, `{"a":"[[[\"]]]"}`, strings.Repeat("[", 70), `{"jsonrpc":"2.0","id":1,"result":{}}`, `"x\"[{"`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":1}}`, `{"jsonrpc":"2.0","id":7.5,"method":"ping"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		out := &bufCloser{}
		c := &lineConn{out: out, maxLine: 1 << 20, maxDepth: 64}
		msg := c.judge(line, false)
		trimmed := bytes.TrimSpace(line)
		if msg != nil {
			if out.Len() != 0 {
				t.Fatalf("%q was both passed on and answered: %s", line, out.Bytes())
			}
			if r, ok := msg.(*jsonrpc.Response); ok && !r.ID.IsValid() {
				// A JSON-RPC 2.0 response with no id, which the SDK cannot
				// decode: passed on only to be logged as a stray.
				var env struct {
					JSONRPC string `json:"jsonrpc"`
				}
				if json.Unmarshal(trimmed, &env) != nil || env.JSONRPC != "2.0" {
					t.Fatalf("%q passed on as a stray response, but it is no JSON-RPC 2.0 message", line)
				}
				return
			}
			if _, err := jsonrpc.DecodeMessage(trimmed); err != nil {
				t.Fatalf("%q passed on, but the SDK cannot decode it: %v", line, err)
			}
			if d := refDepth(trimmed); d > 64 {
				t.Fatalf("%q passed on at depth %d", line, d)
			}
			return
		}
		if len(trimmed) == 0 {
			if out.Len() != 0 {
				t.Fatalf("an empty line was answered: %s", out.Bytes())
			}
			return
		}
		if bytes.Count(out.Bytes(), []byte{'\n'}) != 1 || !bytes.HasSuffix(out.Bytes(), []byte{'\n'}) {
			t.Fatalf("%q answered with %q, want one line", line, out.Bytes())
		}
		var resp struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(out.Bytes(), &resp); err != nil || resp.JSONRPC != "2.0" || resp.ID == nil {
			t.Fatalf("%q answered with %q: %v", line, out.Bytes(), err)
		}
		if resp.Error.Code != -32700 && resp.Error.Code != -32600 {
			t.Fatalf("%q answered with code %d", line, resp.Error.Code)
		}
		// Too deep is refused before parsing; anything else invalid is a
		// parse error.
		tooDeep := depth(trimmed, 64) > 64
		if resp.Error.Code == -32700 && (json.Valid(trimmed) || tooDeep) {
			t.Fatalf("%q: a parse error for valid or too deep JSON", line)
		}
		if resp.Error.Code == -32600 && !json.Valid(trimmed) && !tooDeep {
			t.Fatalf("%q: invalid request for text that is not JSON", line)
		}
		if json.Valid(trimmed) {
			if d, ref := depth(trimmed, 64), refDepth(trimmed); min(d, 65) != min(ref, 65) {
				t.Fatalf("%q: depth %d, encoding/json says %d", line, d, ref)
			}
		}
	})
}
