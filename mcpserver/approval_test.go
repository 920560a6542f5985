package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/internal/syncbuf"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/mcpserver"
)

const approvalManifest = `name: big_refund
description: Refund a large amount, once a person approves it.
side_effect: true
params:
  order_id: {type: string}
  amount: {type: integer, minimum: 1}
approval: required
approval_reason: Refunds above 500 EUR need a second person.
approval_timeout: 1h
`

type bigRefundArgs struct {
	OrderID string `json:"order_id"`
	Amount  int    `json:"amount"`
}

// approvalFixture serves big_refund, which requires approval, counting its
// runs, over a memory store the test can decide in.
type approvalFixture struct {
	srv   *mcpserver.Server
	eff   *effector.Effector
	store effector.DedupStore
	runs  atomic.Int64
}

func newApprovalFixture(t testing.TB, opts ...mcpserver.Option) *approvalFixture {
	return newApprovalFixtureWith(t, nil, opts...)
}

func newApprovalFixtureWith(t testing.TB, effOpts []effector.Option, opts ...mcpserver.Option) *approvalFixture {
	t.Helper()
	f := &approvalFixture{store: effector.NewMemoryStore()}
	var err error
	f.srv, f.eff, err = approvalServer(f.store, func(bigRefundArgs) int64 { return f.runs.Add(1) }, effOpts, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// approvalServer serves big_refund over store; run is told of each run
// and returns its number.
func approvalServer(store effector.DedupStore, run func(bigRefundArgs) int64, effOpts []effector.Option, opts ...mcpserver.Option) (*mcpserver.Server, *effector.Effector, error) {
	specs, err := loader.LoadFS(fstest.MapFS{"m.yaml": {Data: []byte(approvalManifest)}}, "m.yaml")
	if err != nil {
		return nil, nil, err
	}
	b := bindings.New(specs)
	bindings.Effect(b, "big_refund", func(ctx context.Context, a bigRefundArgs) (map[string]any, error) {
		n := run(a)
		return map[string]any{"refund_id": fmt.Sprintf("re_%d", n), "order_id": a.OrderID, "amount": a.Amount}, nil
	})
	bound, err := b.Bind()
	if err != nil {
		return nil, nil, err
	}
	eff, err := effector.New(bound.Effector, store, effOpts...)
	if err != nil {
		return nil, nil, err
	}
	srv, err := mcpserver.New(bound, eff, opts...)
	return srv, eff, err
}

// client connects an SDK client speaking protocol version (the SDK's latest
// when ""), which answers elicitations with elicit when it is not nil (and
// then declares the capability).
func (f *approvalFixture) client(t testing.TB, version string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error), mrtr *mcp.MultiRoundTripOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := f.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, &mcp.ClientOptions{ElicitationHandler: elicit, MultiRoundTrip: mrtr})
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// asker answers every elicitation with its action and content, and keeps
// what it was asked.
type asker struct {
	action  string
	content map[string]any
	fail    error
	mu      sync.Mutex
	asked   []*mcp.ElicitParams
}

func (a *asker) handle(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	a.asked = append(a.asked, req.Params)
	a.mu.Unlock()
	if a.fail != nil {
		return nil, a.fail
	}
	return &mcp.ElicitResult{Action: a.action, Content: a.content}, nil
}

func (a *asker) questions() []*mcp.ElicitParams {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*mcp.ElicitParams(nil), a.asked...)
}

func refundCall(key string) *mcp.CallToolParams {
	return &mcp.CallToolParams{
		Name:      "big_refund",
		Arguments: map[string]any{"order_id": "ord_1", "amount": 900},
		Meta:      mcp.Meta{mcpserver.MetaIdempotencyKey: key},
	}
}

// versions are the two ways a server asks during a call: elicitation/create
// while it serves the call (protocols 2025-06-18 to 2025-11-25), and the
// multi round-trip result whose inputRequests the client answers in a
// retry (2026-07-28, the SDK's latest).
var versions = []struct{ name, version string }{
	{"over elicitation/create (2025-06-18)", "2025-06-18"},
	{"over a multi round-trip (2026-07-28)", ""},
}

func TestAnAcceptedElicitationRunsTheApprovedCallOnce(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			f := newApprovalFixture(t, mcpserver.WithCaller(toolreg.Principal{Subject: "alice@example.test"}))
			a := &asker{action: "accept", content: map[string]any{"note": "checked the order"}}
			cs := f.client(t, v.version, a.handle, nil)
			ctx := context.Background()

			res, err := cs.CallTool(ctx, refundCall("k1"))
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError {
				t.Fatalf("isError: %s", text(t, res))
			}
			if got := f.runs.Load(); got != 1 {
				t.Fatalf("the tool ran %d times, want once", got)
			}
			if got := marshal(t, res.StructuredContent); got != `{"amount":900,"order_id":"ord_1","refund_id":"re_1"}` {
				t.Errorf("structuredContent %s, want the tool's result", got)
			}
			id, _ := res.Meta[mcpserver.MetaApprovalID].(string)
			if id == "" || res.Meta[mcpserver.MetaApprovalState] != "approved" || res.Meta[mcpserver.MetaStatus] != "OK" {
				t.Errorf("_meta %v, want the approval id, state approved, status OK", res.Meta)
			}

			q := a.questions()
			if len(q) != 1 {
				t.Fatalf("the user was asked %d times, want once", len(q))
			}
			for _, want := range []string{"big_refund", "Refunds above 500 EUR need a second person.", `"amount": 900`, `"order_id": "ord_1"`, id} {
				if !strings.Contains(q[0].Message, want) {
					t.Errorf("the question does not say %q:\n%s", want, q[0].Message)
				}
			}
			ap, err := effector.LookupApproval(ctx, f.store, id)
			if err != nil {
				t.Fatal(err)
			}
			if ap.State != effector.ApprovalApproved || ap.Decision.By != "alice@example.test" || ap.Decision.Note != "checked the order" {
				t.Errorf("recorded %v by %q, note %q; want approved by the principal, with the user's note", ap.State, ap.Decision.By, ap.Decision.Note)
			}

			// The same call again: its outcome, without asking or running again.
			again, err := cs.CallTool(ctx, refundCall("k1"))
			if err != nil {
				t.Fatal(err)
			}
			if again.IsError || marshal(t, again.StructuredContent) != marshal(t, res.StructuredContent) {
				t.Errorf("the retry got isError %v, %s; want the first result", again.IsError, text(t, again))
			}
			if got, asked := f.runs.Load(), len(a.questions()); got != 1 || asked != 1 {
				t.Errorf("after a retry the tool ran %d times and the user was asked %d times, want once each", got, asked)
			}
		})
	}
}

func TestADeclinedElicitationRunsNothing(t *testing.T) {
	for _, v := range versions {
		for _, action := range []string{"decline", "cancel"} {
			t.Run(v.name+", "+action, func(t *testing.T) {
				t.Parallel()
				f := newApprovalFixture(t)
				a := &asker{action: action}
				cs := f.client(t, v.version, a.handle, nil)
				ctx := context.Background()

				res, err := cs.CallTool(ctx, refundCall("k1"))
				if err != nil {
					t.Fatal(err)
				}
				id, _ := res.Meta[mcpserver.MetaApprovalID].(string)
				if !res.IsError || id == "" || !strings.Contains(text(t, res), "approval "+id+" was denied") || !strings.Contains(text(t, res), "declined by the MCP client's user") {
					t.Fatalf("isError %v, _meta %v: %s; want an isError saying the approval was declined, naming it", res.IsError, res.Meta, text(t, res))
				}
				if res.Meta[mcpserver.MetaApprovalState] != "denied" || res.Meta[mcpserver.MetaStatus] != "REJECTED" {
					t.Errorf("_meta %v, want state denied, status REJECTED", res.Meta)
				}
				if got := f.runs.Load(); got != 0 {
					t.Fatalf("the tool ran %d times, want never", got)
				}
				ap, err := effector.LookupApproval(ctx, f.store, id)
				if err != nil {
					t.Fatal(err)
				}
				if ap.State != effector.ApprovalDenied || ap.Decision.By != mcpserver.ApproverClient {
					t.Errorf("recorded %v by %q, want denied by %q", ap.State, ap.Decision.By, mcpserver.ApproverClient)
				}
				// A person approving it now is refused: the first decision wins.
				var conflict *effector.DecisionConflictError
				if _, err := f.eff.Decide(ctx, id, effector.Decision{Verdict: effector.Approve, By: "ops"}); !errors.As(err, &conflict) {
					t.Errorf("approving after the decline: %v, want a *DecisionConflictError", err)
				}
				if _, err := cs.CallTool(ctx, refundCall("k1")); err != nil || f.runs.Load() != 0 || len(a.questions()) != 1 {
					t.Errorf("a retry: err %v, %d runs, %d questions; want no run and no new question", err, f.runs.Load(), len(a.questions()))
				}
			})
		}
	}
}

func TestWithoutElicitationTheCallWaitsForAPersonAndARetryGetsTheOutcome(t *testing.T) {
	t.Parallel()
	f := newApprovalFixture(t)
	cs := f.client(t, "", nil, nil)
	ctx := context.Background()

	res, err := cs.CallTool(ctx, refundCall("k1"))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := res.Meta[mcpserver.MetaApprovalID].(string)
	if !res.IsError || id == "" || res.Meta[mcpserver.MetaApprovalState] != "pending" {
		t.Fatalf("isError %v, _meta %v, want an isError naming the pending approval", res.IsError, res.Meta)
	}
	for _, want := range []string{"toolreg approvals approve " + id, "elicitation", "Refunds above 500 EUR"} {
		if !strings.Contains(text(t, res), want) {
			t.Errorf("the result does not say %q: %s", want, text(t, res))
		}
	}
	if f.runs.Load() != 0 {
		t.Fatal("the tool ran before anyone approved it")
	}

	// Retried before anyone decides: still pending, the same approval.
	res, err = cs.CallTool(ctx, refundCall("k1"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || res.Meta[mcpserver.MetaApprovalID] != id {
		t.Fatalf("the retry: isError %v, _meta %v; want the same pending approval %s", res.IsError, res.Meta, id)
	}
	n := 0
	if err := effector.Approvals(ctx, f.store, func(effector.Approval) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("%d approvals recorded (%v), want 1", n, err)
	}

	// A person approves it where the tools' functions are not (`toolreg
	// approvals approve`): the retry runs it, once, and returns its result.
	if _, err := effector.RecordDecision(ctx, f.store, id, effector.Decision{Verdict: effector.Approve, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		res, err = cs.CallTool(ctx, refundCall("k1"))
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || marshal(t, res.StructuredContent) != `{"amount":900,"order_id":"ord_1","refund_id":"re_1"}` {
			t.Fatalf("after the approval: isError %v: %s", res.IsError, text(t, res))
		}
	}
	if got := f.runs.Load(); got != 1 {
		t.Errorf("the tool ran %d times, want once", got)
	}
}

func TestACallWithoutAKeyIsToldThatARetryAsksAgain(t *testing.T) {
	t.Parallel()
	f := newApprovalFixture(t)
	cs := f.client(t, "", nil, nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "big_refund", Arguments: map[string]any{"order_id": "ord_1", "amount": 900}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(t, res), mcpserver.MetaIdempotencyKey) {
		t.Errorf("isError %v: %s; want it to say a retry needs an idempotency key", res.IsError, text(t, res))
	}
}

func TestAFailedElicitationLeavesTheApprovalPending(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			f := newApprovalFixture(t)
			a := &asker{fail: errors.New("the user's window closed")}
			cs := f.client(t, v.version, a.handle, nil)
			ctx := context.Background()
			res, err := cs.CallTool(ctx, refundCall("k1"))
			if v.version != "" {
				// The server asked over elicitation/create, which failed.
				if err != nil {
					t.Fatal(err)
				}
				id, _ := res.Meta[mcpserver.MetaApprovalID].(string)
				if !res.IsError || id == "" || !strings.Contains(text(t, res), "toolreg approvals approve "+id) {
					t.Fatalf("isError %v, _meta %v: %s; want the pending approval and how to decide it", res.IsError, res.Meta, text(t, res))
				}
			} else if err == nil {
				// The client could not answer: the SDK client fails the call.
				t.Fatalf("the call returned %+v with the client's elicitation failing", res)
			}
			if f.runs.Load() != 0 || len(a.questions()) != 1 {
				t.Fatalf("%d runs, %d questions; want no run, one question", f.runs.Load(), len(a.questions()))
			}
			n := 0
			if err := effector.Approvals(ctx, f.store, func(ap effector.Approval) error {
				n++
				if ap.State != effector.ApprovalPending {
					t.Errorf("approval %s is %v, want pending", ap.ID, ap.State)
				}
				return nil
			}); err != nil || n != 1 {
				t.Fatalf("%d approvals (%v), want 1", n, err)
			}
		})
	}
}

// TestAnAnswerCountsOnlyForTheCallItWasAskedFor: the multi round-trip state
// that carries the approval id is the server's, bound to the call: a client
// cannot approve another approval, or other arguments, by sending an
// answer with a state of its own.
func TestAnAnswerCountsOnlyForTheCallItWasAskedFor(t *testing.T) {
	t.Parallel()
	f := newApprovalFixture(t)
	cs := f.client(t, "", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return nil, errors.New("not asked: the test answers itself")
	}, &mcp.MultiRoundTripOptions{Disabled: true})
	ctx := context.Background()

	first, err := cs.CallTool(ctx, refundCall("k1"))
	if err != nil {
		t.Fatal(err)
	}
	if !first.NeedsInput() || first.RequestState == "" || len(first.InputRequests) != 1 {
		t.Fatalf("the first call: %+v, want input required with a request state", first)
	}
	id, _ := first.Meta[mcpserver.MetaApprovalID].(string)
	accept := mcp.InputResponseMap{"toolreg/approval": &mcp.ElicitResult{Action: "accept"}}
	other := refundCall("k2")
	other.Arguments = map[string]any{"order_id": "ord_1", "amount": 9000}
	for _, c := range []struct {
		name   string
		params *mcp.CallToolParams
		state  string
	}{
		{"a state naming the approval, forged", refundCall("k1"), id + ".AAAA"},
		{"no state", refundCall("k1"), ""},
		{"the state, for other arguments", other, first.RequestState},
	} {
		p := c.params
		p.InputResponses, p.RequestState = accept, c.state
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !res.IsError || !strings.Contains(text(t, res), "requestState") {
			t.Errorf("%s: isError %v: %s; want it refused", c.name, res.IsError, text(t, res))
		}
	}
	if f.runs.Load() != 0 {
		t.Fatalf("the tool ran %d times on answers the server did not ask for", f.runs.Load())
	}
	ap, err := effector.LookupApproval(ctx, f.store, id)
	if err != nil || ap.State != effector.ApprovalPending {
		t.Fatalf("approval %s is %v (%v), want still pending", id, ap.State, err)
	}

	// The real state answers it.
	p := refundCall("k1")
	p.InputResponses, p.RequestState = accept, first.RequestState
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || f.runs.Load() != 1 {
		t.Fatalf("with the server's state: isError %v, %d runs: %s", res.IsError, f.runs.Load(), text(t, res))
	}
}

func TestAnApprovalPastItsDeadlineRunsNothing(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer bool // the user accepts, after the deadline; else no one is asked
	}{
		{"answered too late", true},
		{"never answered", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var now atomic.Int64
			now.Store(time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC).UnixMilli())
			clock := func() time.Time { return time.UnixMilli(now.Load()) }
			f := newApprovalFixtureWith(t, []effector.Option{effector.WithClock(clock)}, mcpserver.WithClock(clock))
			var elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
			if c.answer {
				elicit = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					now.Add((61 * time.Minute).Milliseconds()) // approval_timeout is 1h
					return &mcp.ElicitResult{Action: "accept"}, nil
				}
			}
			cs := f.client(t, "2025-06-18", elicit, nil)
			ctx := context.Background()
			res, err := cs.CallTool(ctx, refundCall("k1"))
			if err != nil {
				t.Fatal(err)
			}
			if !c.answer {
				if res.Meta[mcpserver.MetaApprovalState] != "pending" {
					t.Fatalf("_meta %v, want it pending", res.Meta)
				}
				now.Add((61 * time.Minute).Milliseconds())
				if res, err = cs.CallTool(ctx, refundCall("k1")); err != nil {
					t.Fatal(err)
				}
			}
			if !res.IsError || res.Meta[mcpserver.MetaApprovalState] != "expired" || res.Meta[mcpserver.MetaStatus] != "EXPIRED" || !strings.Contains(text(t, res), "expired") {
				t.Errorf("isError %v, _meta %v: %s; want it expired", res.IsError, res.Meta, text(t, res))
			}
			if f.runs.Load() != 0 {
				t.Errorf("the tool ran %d times after the deadline, want never", f.runs.Load())
			}
		})
	}
}

// TestAnAcceptedCallWithoutAKeyRunsOnceOverEitherTransport: with no
// idempotency key, the multi round-trip retry is another JSON-RPC request,
// so another intent identity: the approval it answers is the one its
// requestState names, and no second approval is staged.
func TestAnAcceptedCallWithoutAKeyRunsOnceOverEitherTransport(t *testing.T) {
	for _, v := range versions {
		for _, transport := range []string{"in memory", "streamable HTTP"} {
			t.Run(v.name+", "+transport, func(t *testing.T) {
				t.Parallel()
				var logs syncbuf.Buffer
				f := newApprovalFixture(t, mcpserver.WithLogger(warnLogger(&logs)))
				a := &asker{action: "accept"}
				var cs *mcp.ClientSession
				if transport == "in memory" {
					cs = f.client(t, v.version, a.handle, nil)
				} else {
					hs := httptest.NewServer(f.srv.Handler(nil))
					t.Cleanup(hs.Close)
					c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, &mcp.ClientOptions{ElicitationHandler: a.handle})
					var err error
					cs, err = c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL}, &mcp.ClientSessionOptions{ProtocolVersion: v.version})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { cs.Close() })
				}
				ctx := context.Background()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "big_refund", Arguments: map[string]any{"order_id": "ord_1", "amount": 900}})
				if err != nil {
					t.Fatal(err)
				}
				if res.IsError || f.runs.Load() != 1 || len(a.questions()) != 1 {
					t.Fatalf("isError %v, %d runs, %d questions: %s; want its result, one run, one question", res.IsError, f.runs.Load(), len(a.questions()), text(t, res))
				}
				n := 0
				if err := effector.Approvals(ctx, f.store, func(effector.Approval) error { n++; return nil }); err != nil || n != 1 {
					t.Errorf("%d approvals recorded (%v), want 1", n, err)
				}
				// The answer to elicitation/create is a response the server
				// asked for, never a stray.
				if strings.Contains(logs.String(), "a response to no request") {
					t.Errorf("the elicitation's answer was taken for a stray response:\n%s", logs.String())
				}
			})
		}
	}
}

// A second caller that sends the first one's idempotency key gets its own
// approval: it neither reads the first call's pending approval nor, once a
// person approves that one, runs it or reads its result. (Keys are scoped
// to the caller WithPrincipal finds; without one, the package doc says, a
// key is shared by every client.)
func TestASecondCallerWithTheSameKeyGetsItsOwnApproval(t *testing.T) {
	t.Parallel()
	f := newApprovalFixture(t, mcpserver.WithPrincipal(func(req mcp.Request) *toolreg.Principal {
		u, _ := req.GetParams().GetMeta()["user"].(string)
		return &toolreg.Principal{Subject: u}
	}))
	ctx := context.Background()
	call := func(cs *mcp.ClientSession, user string) *mcp.CallToolResult {
		t.Helper()
		p := refundCall("k1")
		p.Meta["user"] = user
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	alice, bob := f.client(t, "", nil, nil), f.client(t, "", nil, nil)

	res := call(alice, "alice")
	id1, _ := res.Meta[mcpserver.MetaApprovalID].(string)
	if !res.IsError || id1 == "" {
		t.Fatalf("alice's call: isError %v, _meta %v; want a pending approval", res.IsError, res.Meta)
	}
	if _, err := effector.RecordDecision(ctx, f.store, id1, effector.Decision{Verdict: effector.Approve, By: "ops"}); err != nil {
		t.Fatal(err)
	}

	res = call(bob, "bob")
	id2, _ := res.Meta[mcpserver.MetaApprovalID].(string)
	if !res.IsError || id2 == "" || id2 == id1 || res.Meta[mcpserver.MetaApprovalState] != "pending" {
		t.Fatalf("bob with alice's key: isError %v, _meta %v: %s; want his own pending approval, not %s", res.IsError, res.Meta, text(t, res), id1)
	}
	if n := f.runs.Load(); n != 0 {
		t.Fatalf("bob's call ran alice's approved call (%d runs)", n)
	}
	if res = call(alice, "alice"); res.IsError || f.runs.Load() != 1 {
		t.Fatalf("alice's retry after her approval: %s, runs %d; want her result, one run", text(t, res), f.runs.Load())
	}
}

// A retry that keeps the key but changes the arguments is refused whether
// the approval is pending or granted: an approval of 900 never runs 5000,
// nor asks for a second approval under the same key.
func TestARetryWithOtherArgumentsNeverRunsUnderTheApproval(t *testing.T) {
	t.Parallel()
	f := newApprovalFixture(t)
	ctx := context.Background()
	cs := f.client(t, "", nil, nil)
	other := refundCall("k1")
	other.Arguments = map[string]any{"order_id": "ord_1", "amount": 5000}

	res, err := cs.CallTool(ctx, refundCall("k1"))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := res.Meta[mcpserver.MetaApprovalID].(string)
	if id == "" {
		t.Fatalf("first call: _meta %v, want a pending approval", res.Meta)
	}
	for _, when := range []string{"pending", "approved"} {
		if when == "approved" {
			if _, err := effector.RecordDecision(ctx, f.store, id, effector.Decision{Verdict: effector.Approve, By: "ops"}); err != nil {
				t.Fatal(err)
			}
		}
		res, err = cs.CallTool(ctx, other)
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || !strings.Contains(text(t, res), "other arguments") || strings.Contains(text(t, res), "refund_id") {
			t.Fatalf("%s: the key with other arguments = %s; want an isError refusal without the result", when, text(t, res))
		}
		if n := f.runs.Load(); n != 0 {
			t.Fatalf("%s: the retry with other arguments ran the tool %d times", when, n)
		}
	}
	n := 0
	if err := effector.Approvals(ctx, f.store, func(effector.Approval) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("%d approvals recorded (%v), want 1", n, err)
	}
	res, err = cs.CallTool(ctx, refundCall("k1"))
	if err != nil || res.IsError || marshal(t, res.StructuredContent) != `{"amount":900,"order_id":"ord_1","refund_id":"re_1"}` {
		t.Fatalf("the approved call retried as asked: %v %s; want its 900 refund", err, text(t, res))
	}
}
