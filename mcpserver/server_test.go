package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/mcpserver"
	"github.com/beam-agents/toolreg/provider"
)

const manifests = `
name: greet
description: Greet someone by name.
params:
  name:
    type: string
    description: Who to greet.
    minLength: 2
  shout:
    type: boolean
    description: Greet in capitals.
    default: false
annotations:
  title: Greet
  openWorldHint: false
---
name: charge
description: Charge a card. It moves money and cannot be undone.
side_effect: true
params:
  amount:
    type: integer
    description: The amount in cents.
    minimum: 1
  fail:
    type: boolean
    description: Make the payment provider fail, for tests.
    default: false
annotations:
  title: Charge card
  destructiveHint: true
  idempotentHint: false
  openWorldHint: true
`

type greetArgs struct {
	Name  string `json:"name"`
	Shout bool   `json:"shout"`
}

type chargeArgs struct {
	Amount int64 `json:"amount"`
	Fail   bool  `json:"fail"`
}

// fixture is a server over the two tools above, counting invocations.
type fixture struct {
	specs   []*toolreg.Spec
	bound   *bindings.Bound
	srv     *mcpserver.Server
	greets  atomic.Int64
	charges atomic.Int64
}

func newFixture(t testing.TB, opts ...mcpserver.Option) *fixture {
	return newFixtureWith(t, nil, opts...)
}

func newFixtureWith(t testing.TB, effOpts []effector.Option, opts ...mcpserver.Option) *fixture {
	t.Helper()
	specs, err := loader.LoadFS(fstest.MapFS{"tools.yaml": {Data: []byte(manifests)}}, "tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{specs: specs}
	b := bindings.New(specs)
	bindings.ReadOnly(b, "greet", func(ctx context.Context, a greetArgs) (map[string]string, error) {
		f.greets.Add(1)
		g := "hello " + a.Name
		if a.Shout {
			g = strings.ToUpper(g)
		}
		return map[string]string{"greeting": g}, nil
	})
	bindings.Effect(b, "charge", func(ctx context.Context, a chargeArgs) (map[string]any, error) {
		n := f.charges.Add(1)
		if a.Fail {
			return nil, errors.New("card declined")
		}
		return map[string]any{"charge_id": fmt.Sprintf("ch_%d", n), "amount": a.Amount}, nil
	})
	if f.bound, err = b.Bind(); err != nil {
		t.Fatal(err)
	}
	eff, err := effector.New(f.bound.Effector, effector.NewMemoryStore(), effOpts...)
	if err != nil {
		t.Fatal(err)
	}
	if f.srv, err = mcpserver.New(f.bound, eff, opts...); err != nil {
		t.Fatal(err)
	}
	return f
}

// client connects an SDK client to the server over the in-memory transport.
func (f *fixture) client(t testing.TB) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := f.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

func text(t testing.TB, r *mcp.CallToolResult) string {
	t.Helper()
	if len(r.Content) != 1 {
		t.Fatalf("result has %d contents, want 1: %+v", len(r.Content), r.Content)
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result content is %T, want *mcp.TextContent", r.Content[0])
	}
	return tc.Text
}

func marshal(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ptr[T any](v T) *T { return &v }

func TestToolsListIsTheMCPFormOfEveryTool(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res, err := f.client(t).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Name, Title, Description string
		InputSchema              any
		Annotations              *mcp.ToolAnnotations
	}
	var want []entry
	for _, s := range f.specs {
		var schema any
		if err := json.Unmarshal(s.ParametersSchema(), &schema); err != nil {
			t.Fatal(err)
		}
		want = append(want, entry{Name: s.Name, Title: s.Annotations.Title, Description: s.Description, InputSchema: schema})
	}
	// The SDK lists tools by name, so charge comes before greet.
	want[0], want[1] = want[1], want[0]
	want[0].Annotations = &mcp.ToolAnnotations{Title: "Charge card", ReadOnlyHint: false,
		DestructiveHint: ptr(true), IdempotentHint: false, OpenWorldHint: ptr(true)}
	want[1].Annotations = &mcp.ToolAnnotations{Title: "Greet", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	var got []entry
	for _, tl := range res.Tools {
		got = append(got, entry{tl.Name, tl.Title, tl.Description, tl.InputSchema, tl.Annotations})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools/list (-want +got):\n%s", diff)
	}

	// Every entry is, key for key, the registry's mcp form: what
	// `toolreg schema --provider mcp` prints.
	forms, err := f.bound.Pipeline.ProviderSchema(provider.MCP)
	if err != nil {
		t.Fatal(err)
	}
	rendered := map[string]any{}
	for _, e := range forms {
		var m map[string]any
		if err := json.Unmarshal(e, &m); err != nil {
			t.Fatal(err)
		}
		rendered[m["name"].(string)] = m
	}
	listed := map[string]any{}
	for _, tl := range res.Tools {
		var m map[string]any
		if err := json.Unmarshal([]byte(marshal(t, tl)), &m); err != nil {
			t.Fatal(err)
		}
		listed[tl.Name] = m
	}
	if diff := cmp.Diff(rendered, listed); diff != "" {
		t.Errorf("tools/list against the registry's mcp form (-form +listed):\n%s", diff)
	}
}

func TestAToolWithoutAnnotationsIsListedWithReadOnlyHintAlone(t *testing.T) {
	t.Parallel()
	spec := &toolreg.Spec{Name: "ping", Description: "Ping.", SideEffect: true}
	b := bindings.New([]*toolreg.Spec{spec})
	bindings.Effect(b, "ping", func(context.Context, struct{}) (string, error) { return "pong", nil })
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	eff, err := effector.New(bound.Effector, effector.NewMemoryStore())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(bound, eff)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(srv.Tools()[0])
	if err != nil {
		t.Fatal(err)
	}
	want := `{"annotations":{"idempotentHint":false,"readOnlyHint":false},"description":"Ping.","inputSchema":` +
		string(spec.ParametersSchema()) + `,"name":"ping"}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("tools/list entry (-want +got):\n%s", diff)
	}
}

func TestAValidReadOnlyCallRunsInlineAndReturnsItsResult(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res, err := f.client(t).CallTool(context.Background(), &mcp.CallToolParams{
		Name: "greet", Arguments: map[string]any{"name": "Ada", "shout": true}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("isError result: %s", text(t, res))
	}
	if got, want := text(t, res), `{"greeting":"HELLO ADA"}`; got != want {
		t.Errorf("text = %s, want %s", got, want)
	}
	if diff := cmp.Diff(map[string]any{"greeting": "HELLO ADA"}, res.StructuredContent); diff != "" {
		t.Errorf("structured content (-want +got):\n%s", diff)
	}
	if n := f.greets.Load(); n != 1 {
		t.Errorf("greet ran %d times, want 1", n)
	}
}

func TestInvalidArgumentsComeBackAsAnIsErrorResultWithTheModelMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tool string
		args string
	}{
		{"a read-only call with too short a name", "greet", `{"name":"A"}`},
		{"a read-only call missing its required param", "greet", `{}`},
		{"a read-only call with an unknown param", "greet", `{"name":"Ada","loud":true}`},
		{"a side-effecting call below the minimum", "charge", `{"amount":0}`},
		{"a side-effecting call of the wrong type", "charge", `{"amount":"lots"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			tool, err := f.bound.Pipeline.Get(tt.tool)
			if err != nil {
				t.Fatal(err)
			}
			_, checkErr := tool.CheckArgs(json.RawMessage(tt.args))
			var argErr *toolreg.ToolArgumentError
			if !errors.As(checkErr, &argErr) {
				t.Fatalf("CheckArgs(%s) = %v, want a *toolreg.ToolArgumentError", tt.args, checkErr)
			}
			res, err := f.client(t).CallTool(context.Background(), &mcp.CallToolParams{
				Name: tt.tool, Arguments: json.RawMessage(tt.args)})
			if err != nil {
				t.Fatalf("protocol error %v, want an isError result", err)
			}
			if !res.IsError {
				t.Errorf("isError = false, want true")
			}
			if diff := cmp.Diff(argErr.ModelMessage(), text(t, res)); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
			if g, c := f.greets.Load(), f.charges.Load(); g+c != 0 {
				t.Errorf("functions ran %d (greet) and %d (charge) times, want none", g, c)
			}
		})
	}
}

func TestAnUnknownToolIsAProtocolError(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res, err := f.client(t).CallTool(context.Background(), &mcp.CallToolParams{Name: "gret", Arguments: map[string]any{}})
	if err == nil {
		t.Fatalf("CallTool(gret) = %+v, want a protocol error", res)
	}
	if !strings.Contains(err.Error(), "gret") {
		t.Errorf("error %q does not name the tool", err)
	}
}

func callCharge(t testing.TB, cs *mcp.ClientSession, key string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	p := &mcp.CallToolParams{Name: "charge", Arguments: args}
	if key != "" {
		p.Meta = mcp.Meta{mcpserver.MetaIdempotencyKey: key}
	}
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// hostApp is the caller a server over stdio is configured with: its one
// client, on every connection.
var hostApp = mcpserver.WithCaller(toolreg.Principal{Subject: "host-app"})

func TestAnEffectfulCallRetriedWithTheSameIdempotencyKeyRunsOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, hostApp)
	cs := f.client(t)
	args := map[string]any{"amount": 1250}
	first := callCharge(t, cs, "k-1", args)
	// The retry comes on a new connection, as after a client crash.
	again := callCharge(t, f.client(t), "k-1", args)
	if first.IsError {
		t.Fatalf("isError result: %s", text(t, first))
	}
	if n := f.charges.Load(); n != 1 {
		t.Fatalf("charge ran %d times, want 1", n)
	}
	if diff := cmp.Diff(marshal(t, first), marshal(t, again)); diff != "" {
		t.Errorf("the retry's result differs (-first +retry):\n%s", diff)
	}
	if got, want := text(t, first), `{"amount":1250,"charge_id":"ch_1"}`; got != want {
		t.Errorf("text = %s, want %s", got, want)
	}
	if first.Meta[mcpserver.MetaStatus] != "OK" || first.Meta[mcpserver.MetaIntentID] == "" {
		t.Errorf("_meta = %v, want status OK and an intent id", first.Meta)
	}

	other := callCharge(t, cs, "k-2", args)
	if n := f.charges.Load(); n != 2 {
		t.Errorf("a call with another key: charge ran %d times in all, want 2", n)
	}
	if other.Meta[mcpserver.MetaIntentID] == first.Meta[mcpserver.MetaIntentID] {
		t.Errorf("two keys gave one intent id %v", other.Meta[mcpserver.MetaIntentID])
	}
}

func TestEffectfulCallsWithoutAKeyEachRunOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cs := f.client(t)
	a := callCharge(t, cs, "", map[string]any{"amount": 5})
	b := callCharge(t, cs, "", map[string]any{"amount": 5})
	if n := f.charges.Load(); n != 2 {
		t.Errorf("two calls (two request ids) ran charge %d times, want 2", n)
	}
	if a.Meta[mcpserver.MetaIntentID] == b.Meta[mcpserver.MetaIntentID] {
		t.Errorf("two calls gave one intent id %v", a.Meta[mcpserver.MetaIntentID])
	}
}

func TestAnEffectThatFailsIsAnIsErrorResultAndIsNotRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cs := f.client(t)
	for range 2 {
		res := callCharge(t, cs, "k-fail", map[string]any{"amount": 5, "fail": true})
		if !res.IsError {
			t.Errorf("isError = false, want true")
		}
		if got := text(t, res); !strings.HasPrefix(got, "ERROR: ") || !strings.Contains(got, "card declined") {
			t.Errorf("text = %q, want the ERROR status and the function's error", got)
		}
		if res.Meta[mcpserver.MetaStatus] != "ERROR" {
			t.Errorf("_meta status = %v, want ERROR", res.Meta[mcpserver.MetaStatus])
		}
	}
	if n := f.charges.Load(); n != 1 {
		t.Errorf("charge ran %d times, want 1: an ERROR's effect is unknown, so a retry must not run it again", n)
	}
}

func TestABadIdempotencyKeyIsAnIsErrorResultAndRunsNothing(t *testing.T) {
	t.Parallel()
	for _, key := range []any{"", 42, strings.Repeat("k", 257), map[string]any{"a": 1}} {
		t.Run(fmt.Sprintf("key %.20v", key), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			res, err := f.client(t).CallTool(context.Background(), &mcp.CallToolParams{
				Name: "charge", Arguments: map[string]any{"amount": 5},
				Meta: mcp.Meta{mcpserver.MetaIdempotencyKey: key}})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || !strings.Contains(text(t, res), mcpserver.MetaIdempotencyKey) {
				t.Errorf("result = %+v, want an isError result naming %s", res, mcpserver.MetaIdempotencyKey)
			}
			if n := f.charges.Load(); n != 0 {
				t.Errorf("charge ran %d times, want 0", n)
			}
		})
	}
}

func TestNewRefusesSideEffectingToolsWithoutAnEffector(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := mcpserver.New(f.bound, nil)
	if err == nil || !strings.Contains(err.Error(), "no effector") || !strings.Contains(err.Error(), "charge") {
		t.Errorf("New(bound, nil) = %v, want an error naming charge and saying there is no effector", err)
	}

	// A pipeline-only binding holds no effect table, yet lists charge.
	b := bindings.New(f.specs, bindings.PipelineOnly())
	bindings.ReadOnly(b, "greet", func(context.Context, greetArgs) (string, error) { return "", nil })
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mcpserver.New(bound, nil); err == nil || !strings.Contains(err.Error(), "no effector") {
		t.Errorf("New(pipeline-only bound, nil) = %v, want an error saying there is no effector", err)
	}
}

// rawConn is the client side of an in-memory connection driven with raw
// JSON-RPC messages, so a test can send one request id twice, as a client
// replaying a request does; the SDK's client never reuses one.
type rawConn struct {
	t    testing.TB
	conn mcp.Connection
}

func (f *fixture) raw(t testing.TB) *rawConn {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := f.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); ss.Wait() })
	c := &rawConn{t: t, conn: conn}
	c.call(1000, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"v0"}}`)
	if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *rawConn) call(id int64, method, params string) json.RawMessage {
	c.t.Helper()
	ctx := context.Background()
	rid, err := jsonrpc.MakeID(float64(id))
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.conn.Write(ctx, &jsonrpc.Request{ID: rid, Method: method, Params: json.RawMessage(params)}); err != nil {
		c.t.Fatal(err)
	}
	for {
		msg, err := c.conn.Read(ctx)
		if err != nil {
			c.t.Fatal(err)
		}
		if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID == rid {
			if resp.Error != nil {
				c.t.Fatalf("%s: %v", method, resp.Error)
			}
			return resp.Result
		}
	}
}

func TestARequestDeliveredTwiceWithOneJSONRPCIDRunsItsEffectOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.raw(t)
	// The client puts its own value under the server's request-id key: the
	// server overwrites it, so it cannot make request 7 look like another.
	const params = `{"name":"charge","arguments":{"amount":300},"_meta":{"toolreg/jsonrpc-id":"forged"}}`
	first := c.call(7, "tools/call", params)
	again := c.call(7, "tools/call", params)
	if n := f.charges.Load(); n != 1 {
		t.Fatalf("request 7 delivered twice ran charge %d times, want 1", n)
	}
	if diff := cmp.Diff(string(first), string(again)); diff != "" {
		t.Errorf("the second delivery's result differs (-first +again):\n%s", diff)
	}
	c.call(8, "tools/call", params)
	if n := f.charges.Load(); n != 2 {
		t.Errorf("request 8 after 7: charge ran %d times in all, want 2", n)
	}
	// JSON-RPC ids restart on every connection, so they are scoped to it.
	f.raw(t).call(7, "tools/call", params)
	if n := f.charges.Load(); n != 3 {
		t.Errorf("request 7 on another connection: charge ran %d times in all, want 3", n)
	}
}

func TestAnEffectorThatRequiresSignaturesExecutesSignedIntentsOnly(t *testing.T) {
	t.Parallel()
	key := []byte("0123456789abcdef0123456789abcdef")
	verify := []effector.Option{
		effector.WithVerify(effector.VerifyRequire, map[string][]byte{"k1": key}),
		effector.WithDeadLetter(func(context.Context, *intent.Intent, error) error { return nil }),
	}
	signed := newFixtureWith(t, verify, mcpserver.WithSigningKey("k1", key))
	if res := callCharge(t, signed.client(t), "s-1", map[string]any{"amount": 5}); res.IsError {
		t.Errorf("a signed intent: isError: %s", text(t, res))
	}
	unsigned := newFixtureWith(t, verify)
	res := callCharge(t, unsigned.client(t), "s-1", map[string]any{"amount": 5})
	if !res.IsError || !strings.Contains(text(t, res), "not executed") {
		t.Errorf("an unsigned intent: result %s, want an isError result saying it was not executed", marshal(t, res))
	}
	if n := signed.charges.Load() + unsigned.charges.Load(); n != 1 {
		t.Errorf("charge ran %d times, want 1 (the signed call only)", n)
	}
}

func TestConcurrentRetriesOfOneCallRunItsEffectOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, hostApp)
	const n = 8
	results := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		cs := f.client(t) // each retry on its own connection, as from separate host processes
		wg.Go(func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "charge",
				Arguments: map[string]any{"amount": 99}, Meta: mcp.Meta{mcpserver.MetaIdempotencyKey: "same-call"}})
			if err != nil {
				t.Error(err)
				return
			}
			b, err := json.Marshal(res)
			if err != nil {
				t.Error(err)
			}
			results[i] = string(b)
		})
	}
	wg.Wait()
	if c := f.charges.Load(); c != 1 {
		t.Errorf("%d concurrent retries ran charge %d times, want 1", n, c)
	}
	for i := 1; i < n; i++ {
		if results[i] != results[0] {
			t.Errorf("retry %d answered %s, retry 0 %s", i, results[i], results[0])
		}
	}
}

func TestANullForAnOptionalParamMeansAbsentOnBothPaths(t *testing.T) {
	t.Parallel()
	// A model shown the openai-strict form answers null for optional params;
	// the call must mean what leaving them out means.
	f := newFixture(t)
	cs := f.client(t)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "greet",
		Arguments: json.RawMessage(`{"name":"Ada","shout":null}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); res.IsError || got != `{"greeting":"hello Ada"}` {
		t.Errorf("greet with shout null = %s, want the default (no shouting)", got)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "charge",
		Arguments: json.RawMessage(`{"amount":3,"fail":null}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); res.IsError || got != `{"amount":3,"charge_id":"ch_1"}` {
		t.Errorf("charge with fail null = %s, want the default (no failure)", got)
	}
}

// TestTheServerClockAndTTLDateEachIntent: WithClock dates each
// side-effecting call's intent and WithIntentTTL sets how long it stays
// executable, so an effector whose clock is past that refuses it as EXPIRED
// and runs nothing.
func TestTheServerClockAndTTLDateEachIntent(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1700000000000)
	effectorAt := []effector.Option{effector.WithClock(func() time.Time { return now })}
	tenMinutesAgo := mcpserver.WithClock(func() time.Time { return now.Add(-10 * time.Minute) })
	for _, tt := range []struct {
		name   string
		opts   []mcpserver.Option
		status string
		runs   int64
	}{
		{"an intent dated ten minutes ago runs within the default hour", []mcpserver.Option{tenMinutesAgo}, "OK", 1},
		{"it has expired after a five-minute TTL", []mcpserver.Option{tenMinutesAgo, mcpserver.WithIntentTTL(5 * time.Minute)}, "EXPIRED", 0},
		{"a TTL of zero is the default hour again", []mcpserver.Option{tenMinutesAgo, mcpserver.WithIntentTTL(5 * time.Minute), mcpserver.WithIntentTTL(0)}, "OK", 1},
		{"an intent dated two hours ago has expired", []mcpserver.Option{mcpserver.WithClock(func() time.Time { return now.Add(-2 * time.Hour) })}, "EXPIRED", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixtureWith(t, effectorAt, tt.opts...)
			res := callCharge(t, f.client(t), "k-1", map[string]any{"amount": 5})
			if got := res.Meta[mcpserver.MetaStatus]; got != tt.status {
				t.Errorf("_meta status = %v, want %s; result: %s", got, tt.status, text(t, res))
			}
			if res.IsError != (tt.status != "OK") {
				t.Errorf("isError = %v for status %s", res.IsError, tt.status)
			}
			if n := f.charges.Load(); n != tt.runs {
				t.Errorf("charge ran %d times, want %d", n, tt.runs)
			}
		})
	}
}
