package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/provider/dispatch"
	"github.com/beam-agents/toolreg/runner"
)

func call(id, name, args string) dispatch.Call {
	return dispatch.Call{ID: id, Name: name, Args: json.RawMessage(args)}
}

// statuses lists each outcome as "id status".
func statuses(outs []dispatch.Outcome) []string {
	s := make([]string, len(outs))
	for i, o := range outs {
		s[i] = o.Call.ID + " " + o.Status.String()
	}
	return s
}

// drained drains act and returns its intents' tool names and args.
func drained(t *testing.T, act *runner.Activation) []string {
	t.Helper()
	ins, err := act.Drain()
	if err != nil {
		t.Fatal(err)
	}
	s := make([]string, len(ins))
	for i, in := range ins {
		s[i] = in.ToolName + " " + string(in.ArgsJSON)
	}
	return s
}

func TestARepeatedCallIDRefusesTheWholeResponse(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	act := a.activation()
	_, err := dispatch.Dispatch(context.Background(), act, []dispatch.Call{
		call("call_1", "lookup_customer", `{"customer_id":"cus_ada"}`),
		call("call_2", "refund_order", `{"order_id":"ord_1","amount":5}`),
		call("call_1", "send_email", `{"to":"ada@example.test","subject":"hi"}`),
	})
	var re *dispatch.ResponseError
	if !errors.As(err, &re) || !errors.Is(err, toolreg.ErrTool) {
		t.Fatalf("Dispatch = %v; want a *dispatch.ResponseError", err)
	}
	for _, want := range []string{`tool calls 1 ("lookup_customer") and 3 ("send_email") share the id "call_1"`, "nothing was run or staged"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if got := a.calls(); len(got) != 0 {
		t.Errorf("functions ran for a refused response: %v", got)
	}
	if got := drained(t, act); len(got) != 0 {
		t.Errorf("intents staged for a refused response: %v", got)
	}
}

func TestACallWithNoIDRefusesTheWholeResponse(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	act := a.activation()
	_, err := dispatch.Dispatch(context.Background(), act, []dispatch.Call{
		call("call_1", "refund_order", `{"order_id":"ord_1","amount":5}`),
		call("", "lookup_customer", `{"customer_id":"cus_ada"}`),
	})
	if !errors.As(err, new(*dispatch.ResponseError)) || !strings.Contains(err.Error(), `tool call 2 ("lookup_customer") has no id`) {
		t.Fatalf("Dispatch = %v; want a *dispatch.ResponseError naming call 2", err)
	}
	if got := drained(t, act); len(got) != 0 || len(a.calls()) != 0 {
		t.Errorf("a refused response staged %v and ran %v", got, a.calls())
	}
}

func TestMalformedArgumentsAreRefusedAndSentBackToTheModel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tool, args string
		want             string // in the model's message
	}{
		{"truncated JSON for a read-only tool", "lookup_customer", `{"customer_id":"cus_ada"`, `the arguments: expected one JSON object of arguments, got `},
		{"JSON that is not an object for a read-only tool", "search_orders", `["cus_ada"]`, `the arguments: expected one JSON object of arguments, got `},
		{"not JSON at all for an effect", "refund_order", `order ord_1, 5 euros`, `the arguments: expected one JSON object of arguments, got `},
		{"a string holding an object for an effect", "refund_order", `"{\"order_id\":\"ord_1\",\"amount\":5}"`, `the arguments: expected one JSON object of arguments, got `},
		{"a value that breaks the contract", "refund_order", `{"order_id":"ord_1","amount":-5}`, `"amount": expected`},
		{"a pattern the id does not match", "lookup_customer", `{"customer_id":"ada"}`, `"customer_id": expected`},
		{"a missing required param", "send_email", `{"to":"ada@example.test"}`, `"subject": expected`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := newAgent(t)
			act := a.activation()
			outs, err := dispatch.Dispatch(context.Background(), act, []dispatch.Call{call("call_1", tt.tool, tt.args)})
			if err != nil {
				t.Fatal(err)
			}
			o := outs[0]
			var argErr *toolreg.ToolArgumentError
			if o.Status != dispatch.Refused || !o.IsError || !errors.As(o.Err, &argErr) {
				t.Fatalf("outcome %v, %v; want Refused with a *toolreg.ToolArgumentError", o.Status, o.Err)
			}
			if o.Text != argErr.ModelMessage() || !strings.Contains(o.Text, tt.want) || !strings.HasPrefix(o.Text, "The call to "+tt.tool+" was not run") {
				t.Errorf("the model is told %q; want the error's ModelMessage, mentioning %q", o.Text, tt.want)
			}
			if got := a.calls(); len(got) != 0 {
				t.Errorf("functions ran: %v", got)
			}
			if act.Step() != 0 {
				t.Errorf("a refused effect moved the step to %d", act.Step())
			}
		})
	}
}

func TestAnUnknownToolIsRefusedWithTheNamesItMayMean(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	act := a.activation()
	outs, err := dispatch.Dispatch(context.Background(), act, []dispatch.Call{
		call("call_1", "lookup_custmer", `{"customer_id":"cus_ada"}`),
		call("call_2", "delete_everything", `{}`),
		call("call_3", "lookup_customer", `{"customer_id":"cus_ada"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"call_1 refused", "call_2 refused", "call_3 ran"}, statuses(outs)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if !errors.As(outs[0].Err, new(*toolreg.ToolNotFoundError)) {
		t.Errorf("call_1's error %v; want *toolreg.ToolNotFoundError", outs[0].Err)
	}
	for i, want := range []string{
		`The call was not run: there is no tool named "lookup_custmer". Did you mean "lookup_customer"? Call one of the tools you were given.`,
		`The call was not run: there is no tool named "delete_everything". Call one of the tools you were given.`,
	} {
		if outs[i].Text != want || !outs[i].IsError {
			t.Errorf("call %d: the model is told %q (error %v); want %q", i+1, outs[i].Text, outs[i].IsError, want)
		}
	}
	if diff := cmp.Diff([]string{`lookup_customer {"customer_id":"cus_ada"}`}, a.calls()); diff != "" {
		t.Errorf("functions invoked (-want +got):\n%s", diff)
	}
}

// A model that emits the same refund twice in one response (parallel tool
// calls do this) gets one refund: the second call is refused and points at
// the first one's intent. A refund with other arguments is its own effect.
func TestAnEffectCalledTwiceInOneResponseIsStagedOnce(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	act := a.activation()
	outs, err := dispatch.Dispatch(context.Background(), act, []dispatch.Call{
		call("call_1", "refund_order", `{"order_id":"ord_1","amount":5}`),
		call("call_2", "refund_order", `{ "note": null, "amount": 5, "order_id": "ord_1" }`), // the same call, canonically
		call("call_3", "refund_order", `{"order_id":"ord_1","amount":6}`),
		call("call_4", "refund_order", `{"order_id":"ord_1","amount":"5"}`), // coerced to the same call
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"call_1 staged", "call_2 refused", "call_3 staged", "call_4 refused"}, statuses(outs)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	first := outs[0].Intent
	for _, o := range []dispatch.Outcome{outs[1], outs[3]} {
		var rep *dispatch.RepeatedEffectError
		if !errors.As(o.Err, &rep) || rep.FirstCallID != "call_1" || rep.IntentID != first.ID || rep.CallID != o.Call.ID {
			t.Errorf("%s: error %#v; want a *RepeatedEffectError pointing at call_1 and intent %s", o.Call.ID, o.Err, first.ID)
		}
		want := "The call to refund_order was not staged: it repeats call call_1 of the same turn (same tool, same arguments), which was staged once as intent " + first.ID + ". To request the same effect a second time, call the tool again in a later turn."
		if o.Text != want || !o.IsError {
			t.Errorf("%s: the model is told %q; want %q", o.Call.ID, o.Text, want)
		}
	}
	if outs[2].Intent.StepIndex != 1 {
		t.Errorf("the second distinct refund took step %d; want 1", outs[2].Intent.StepIndex)
	}
	want := []string{`refund_order {"amount":5,"order_id":"ord_1"}`, `refund_order {"amount":6,"order_id":"ord_1"}`}
	if diff := cmp.Diff(want, drained(t, act)); diff != "" {
		t.Errorf("staged intents (-want +got):\n%s", diff)
	}
}

// Read-only calls are not deduplicated: running one twice has no effect.
func TestAReadOnlyCallRepeatedRunsTwice(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	outs, err := dispatch.Dispatch(context.Background(), a.activation(), []dispatch.Call{
		call("call_1", "lookup_customer", `{"customer_id":"cus_ada"}`),
		call("call_2", "lookup_customer", `{"customer_id":"cus_ada"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"call_1 ran", "call_2 ran"}, statuses(outs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if n := len(a.calls()); n != 2 {
		t.Errorf("lookup_customer ran %d times; want 2", n)
	}
}

func TestEachCallIsAnsweredInCallOrder(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	act := a.activation()
	outs, err := dispatch.Dispatch(context.Background(), act, []dispatch.Call{
		call("c1", "send_email", `{"to":"ada@example.test","subject":"Your refund"}`),
		call("c2", "lookup_customer", `{"customer_id":"cus_ada"}`),
		call("c3", "refund_order", `{"order_id":"ord_1","amount":5,"note":"dup"}`),
		call("c4", "lookup_customer", `{"customer_id":"cus_bob"}`),
		call("c5", "explode", `{}`),
		call("c6", "search_orders", `{"customer_id":"cus_ada","status":"paid","limit":"3"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c1 staged", "c2 ran", "c3 staged", "c4 failed", "c5 failed", "c6 ran"}, statuses(outs)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	texts := make([]string, len(outs))
	for i, o := range outs {
		texts[i] = o.Text
	}
	want := []string{
		"The call to send_email was staged as intent " + outs[0].Intent.ID + ": it runs once, after this step of the conversation is committed, and its result comes in a later turn. Do not call it again for the same request.",
		`{"id":"cus_ada","name":"Ada Lovelace"}`,
		"The call to refund_order was staged as intent " + outs[2].Intent.ID + ": it runs once, after this step of the conversation is committed, and its result comes in a later turn. Do not call it again for the same request.",
		"The call to lookup_customer failed: no customer cus_bob",
		"The call to explode failed with an internal error.",
		`{"customer_id":"cus_ada","limit":3,"orders":["ord_1"],"status":"paid"}`,
	}
	if diff := cmp.Diff(want, texts); diff != "" {
		t.Errorf("the model's answers (-want +got):\n%s", diff)
	}
	if !errors.As(outs[4].Err, new(*toolreg.ToolPanicError)) {
		t.Errorf("explode's error %v; want *toolreg.ToolPanicError", outs[4].Err)
	}
	if outs[0].Intent.StepIndex != 0 || outs[2].Intent.StepIndex != 1 {
		t.Errorf("effects took steps %d and %d; want 0 and 1, in call order", outs[0].Intent.StepIndex, outs[2].Intent.StepIndex)
	}
	if outs[0].Intent.ID != intent.IntentID([]byte("ticket-4711"), 1, 0) {
		t.Errorf("the first intent's id %s is not IntentID(ticket-4711, 1, 0)", outs[0].Intent.ID)
	}
	if r, ok := outs[1].Result.(customer); !ok || r.Name != "Ada Lovelace" {
		t.Errorf("c2's Result = %#v; want the function's customer value", outs[1].Result)
	}
	wantCalls := []string{
		`explode {}`,
		`lookup_customer {"customer_id":"cus_ada"}`,
		`lookup_customer {"customer_id":"cus_bob"}`,
		`search_orders {"customer_id":"cus_ada","status":"paid","limit":3}`,
	}
	if diff := cmp.Diff(wantCalls, a.calls()); diff != "" {
		t.Errorf("functions invoked (-want +got):\n%s", diff)
	}
	if got := a.ranEffects(); len(got) != 0 {
		t.Errorf("effect functions ran inside dispatch: %v", got)
	}
}

// The strict forms make an optional param required and nullable; a model
// that sends null for it means it did not give it.
func TestAStrictNullForAnOptionalParamMeansAbsent(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	act := a.activation()
	outs, err := dispatch.Dispatch(context.Background(), act, []dispatch.Call{
		call("c1", "search_orders", `{"customer_id":"cus_ada","status":null,"limit":null}`),
		call("c2", "refund_order", `{"order_id":"ord_1","amount":5,"note":null}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c1 ran", "c2 staged"}, statuses(outs)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if r := outs[0].Result.(searchResult); r.Status != nil || r.Limit != 10 {
		t.Errorf("search_orders got status %v, limit %d; want status absent (nil) and limit's default 10", r.Status, r.Limit)
	}
	if got := string(outs[1].Intent.ArgsJSON); got != `{"amount":5,"order_id":"ord_1"}` {
		t.Errorf("the refund's intent holds %s; want the note left out", got)
	}
}

func TestAResponseWithNoToolCallsGivesNothingToAnswer(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	act := a.activation()
	for _, calls := range [][]dispatch.Call{nil, {}} {
		outs, err := dispatch.Dispatch(context.Background(), act, calls)
		if err != nil || len(outs) != 0 {
			t.Errorf("Dispatch(%#v) = %v, %v; want no outcomes and no error", calls, outs, err)
		}
	}
	if got := drained(t, act); len(got) != 0 || len(a.calls()) != 0 {
		t.Errorf("staged %v, ran %v", got, a.calls())
	}
}

func TestACustomToolCallIsRefused(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	outs, err := dispatch.Dispatch(context.Background(), a.activation(), []dispatch.Call{
		{ID: "c1", Name: "refund_order", Args: json.RawMessage(`refund ord_1`), Type: "custom"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var uc *dispatch.UnsupportedCallError
	if outs[0].Status != dispatch.Refused || !errors.As(outs[0].Err, &uc) || uc.Type != "custom" {
		t.Fatalf("outcome %v, %v; want Refused with *UnsupportedCallError", outs[0].Status, outs[0].Err)
	}
	if want := "The call was not run: refund_order is a custom tool call, and only the function tools you were given can be called."; outs[0].Text != want {
		t.Errorf("the model is told %q; want %q", outs[0].Text, want)
	}
}

// Errors that are the activation's, not the model's, fail the dispatch: the
// activation must then not be drained.
func TestAnActivationThatCannotStageFailsTheDispatch(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	calls := []dispatch.Call{call("c1", "refund_order", `{"order_id":"ord_1","amount":5}`)}

	noClock := runner.NewActivation(a.bound.Pipeline, []byte("ticket-4711"), 1)
	if _, err := dispatch.Dispatch(context.Background(), noClock, calls); !errors.Is(err, runner.ErrNoClock) {
		t.Errorf("an activation without a clock: %v; want runner.ErrNoClock", err)
	}
	done := a.activation()
	if _, err := done.Drain(); err != nil {
		t.Fatal(err)
	}
	if _, err := dispatch.Dispatch(context.Background(), done, calls); !errors.Is(err, runner.ErrDrained) {
		t.Errorf("a drained activation: %v; want runner.ErrDrained", err)
	}
}

func TestAnEndedContextRunsAndStagesNothing(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	act := a.activation()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := dispatch.Dispatch(ctx, act, []dispatch.Call{
		call("c1", "lookup_customer", `{"customer_id":"cus_ada"}`),
		call("c2", "refund_order", `{"order_id":"ord_1","amount":5}`),
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Dispatch = %v; want context.Canceled", err)
	}
	if got := drained(t, act); len(got) != 0 || len(a.calls()) != 0 {
		t.Errorf("staged %v, ran %v", got, a.calls())
	}
}

// A read-only call still running when ctx ends leaves the response
// unanswered, and no effect of it is staged.
func TestAContextEndingDuringTheReadsStagesNothing(t *testing.T) {
	t.Parallel()
	spec := &toolreg.Spec{Name: "slow", Description: "Wait for ctx.", Pos: toolreg.Pos{File: "slow.yaml", Line: 1}}
	refund := &toolreg.Spec{Name: "refund_order", Description: "Refund.", SideEffect: true, Pos: toolreg.Pos{File: "r.yaml", Line: 1}}
	b := bindings.New([]*toolreg.Spec{spec, refund})
	ctx, cancel := context.WithCancel(context.Background())
	bindings.ReadOnly(b, "slow", func(ctx context.Context, _ struct{}) (string, error) {
		cancel()
		<-ctx.Done()
		return "", ctx.Err()
	})
	bindings.Effect(b, "refund_order", func(context.Context, struct{}) (string, error) { return "", nil })
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	act := runner.NewActivation(bound.Pipeline, []byte("k"), 1, runner.WithClock(func() time.Time { return eventTime }))
	_, err = dispatch.Dispatch(ctx, act, []dispatch.Call{call("c1", "slow", `{}`), call("c2", "refund_order", `{}`)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Dispatch = %v; want context.Canceled", err)
	}
	if act.Step() != 0 {
		t.Errorf("the effect was staged (step %d) after ctx ended", act.Step())
	}
}

// Read-only calls run at once: three calls that each wait for the other two
// finish only if they run concurrently.
func TestReadOnlyCallsRunConcurrently(t *testing.T) {
	t.Parallel()
	spec := &toolreg.Spec{Name: "meet", Description: "Wait for the others.", Pos: toolreg.Pos{File: "meet.yaml", Line: 1},
		Params: []*toolreg.Param{{Name: "who", Schema: toolreg.Schema{Type: toolreg.TypeString}}}}
	b := bindings.New([]*toolreg.Spec{spec})
	var wg sync.WaitGroup
	wg.Add(3)
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	bindings.ReadOnly(b, "meet", func(_ context.Context, in struct {
		Who string `json:"who"`
	}) (string, error) {
		wg.Done()
		select {
		case <-all:
			return "met " + in.Who, nil
		case <-time.After(5 * time.Second):
			return "", errors.New("ran alone")
		}
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	act := runner.NewActivation(bound.Pipeline, []byte("k"), 1)
	outs, err := dispatch.Dispatch(context.Background(), act, []dispatch.Call{
		call("c1", "meet", `{"who":"a"}`), call("c2", "meet", `{"who":"b"}`), call("c3", "meet", `{"who":"c"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{`"met a"`, `"met b"`, `"met c"`} {
		if outs[i].Text != want {
			t.Errorf("call %d answered %q; want %q", i+1, outs[i].Text, want)
		}
	}
}

// The same response dispatched in a replayed activation stages
// byte-identical intents.
func TestAReplayedResponseStagesTheSameIntents(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	calls := []dispatch.Call{
		call("c1", "lookup_customer", `{"customer_id":"cus_ada"}`),
		call("c2", "refund_order", `{"order_id":"ord_1","amount":5}`),
		call("c3", "send_email", `{"to":"ada@example.test","subject":"Your refund"}`),
	}
	wire := func() [][]byte {
		act := a.activation()
		if _, err := dispatch.Dispatch(context.Background(), act, calls); err != nil {
			t.Fatal(err)
		}
		ins, err := act.Drain()
		if err != nil {
			t.Fatal(err)
		}
		out := make([][]byte, len(ins))
		for i, in := range ins {
			if out[i], err = in.MarshalBinary(); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	first, again := wire(), wire()
	if len(first) != 2 || !cmp.Equal(first, again) {
		t.Errorf("the replay staged other intents:\nfirst %x\nagain %x", first, again)
	}
	for i, id := range []string{"c2", "c3"} {
		var in intent.Intent
		if err := in.UnmarshalBinary(first[i]); err != nil || in.ToolCallID != id {
			t.Errorf("intent %d carries tool call id %q, %v; want its call's, %s", i, in.ToolCallID, err, id)
		}
	}
}

func TestResultTextSaysWhatHappened(t *testing.T) {
	t.Parallel()
	id := "0193a000-0000-5000-8000-000000000001"
	tests := []struct {
		name    string
		r       intent.Result
		want    string
		isError bool
	}{
		{"an OK result is its payload", intent.Result{IntentID: id, Status: intent.StatusOK, Payload: []byte(`{"refund_id":"re_1"}`)}, `{"refund_id":"re_1"}`, false},
		{"an OK result without payload is null", intent.Result{IntentID: id, Status: intent.StatusOK}, `null`, false},
		{"an error leaves the effect unknown", intent.Result{IntentID: id, Status: intent.StatusError, ErrorMessage: "payment provider timed out."},
			"Intent " + id + " failed: payment provider timed out. Whether its effect happened is unknown: check before you request it again.", true},
		{"an expired intent did nothing", intent.Result{IntentID: id, Status: intent.StatusExpired},
			"Intent " + id + " expired before it ran: nothing was done. Request it again if it is still wanted.", true},
		{"a rejected intent did nothing", intent.Result{IntentID: id, Status: intent.StatusRejected, ErrorMessage: "approval denied by ops"},
			"Intent " + id + " was refused before it ran: approval denied by ops. Nothing was done.", true},
		{"a rejected intent without a reason", intent.Result{IntentID: id, Status: intent.StatusRejected},
			"Intent " + id + " was refused before it ran: no reason was given. Nothing was done.", true},
		{"an unknown status is an error", intent.Result{IntentID: id, Status: 9},
			"Intent " + id + " ended with status 9: whether its effect happened is unknown.", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text, isErr := dispatch.ResultText(&tt.r)
			if text != tt.want || isErr != tt.isError {
				t.Errorf("ResultText = %q, %v; want %q, %v", text, isErr, tt.want, tt.isError)
			}
		})
	}
}
